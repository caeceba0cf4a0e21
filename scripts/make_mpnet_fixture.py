"""What `transformers` computes on the real all-mpnet-base-v2 (the five optional part packages, joined by
model/io/mpnet_package.py), for tests/model/test_mpnet_real.py (run once, offline, in the throwaway environment of
scripts/make_hf_fixtures.py, with the parts installed):

    USE_HUB_KERNELS=NO HF_HUB_OFFLINE=1 PYTHONPATH=. /tmp/hfenv/bin/python scripts/make_mpnet_fixture.py

Writes tests/fixtures/mpnet_reference.safetensors: per text the token ids transformers' tokenizer gives, every
attention pattern of the short text, layer 6's and the last layer's of the long one, and the last hidden state.
"""

from __future__ import annotations

import sys
from pathlib import Path

import torch
from safetensors.torch import save_file
from transformers import AutoTokenizer, MPNetModel

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from model.io.mpnet_package import mpnet_folder

OUT = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "mpnet_reference.safetensors"
TEXTS = {
    "short": "The animal didn't cross the street because it was too tired.",
    "long": "The query asks, the keys answer, and the values come back weighted by how well each key fits the query; "
    "far apart tokens share the relative-position buckets that a long sentence reaches.",
}


def main() -> None:
    folder = mpnet_folder()
    tok = AutoTokenizer.from_pretrained(folder)
    model = MPNetModel.from_pretrained(folder, attn_implementation="eager").eval()
    ref = {}
    for key, text in TEXTS.items():
        ids = tok(text, return_tensors="pt")["input_ids"]
        with torch.no_grad():
            out = model(ids, output_attentions=True)
        attn = torch.stack([a[0] for a in out.attentions])  # (L, H, N, N)
        ref[f"{key}.ids"] = ids[0]
        ref[f"{key}.attentions"] = (attn if key == "short" else attn[[6, -1]]).contiguous()
        ref[f"{key}.hidden"] = out.last_hidden_state[0].contiguous()
    save_file(ref, str(OUT))
    print(f"{OUT.name}: {OUT.stat().st_size / 1024:.0f} KB, tokens {[len(ref[f'{k}.ids']) for k in TEXTS]}")


if __name__ == "__main__":
    main()
