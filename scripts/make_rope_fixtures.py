"""Make tiny decoders with scaled RoPE and what `transformers` computes on them (run once, offline, in the throwaway
environment of scripts/make_hf_fixtures.py):

    /tmp/hfenv/bin/python scripts/make_rope_fixtures.py [case …]

Each case gets tests/fixtures/hf_rope/<case>/: the save_pretrained folder (config.json with its rope_parameters,
model.safetensors, tokenizer.json) and reference.safetensors with, for a text shorter than the original context and
one longer (so dynamic NTK and LongRoPE's long factors switch in), the ids, every attention pattern (eager) and the
logits. tests/model/test_rope_scaling.py compares on every run.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import torch
from safetensors.torch import save_file
from transformers import LlamaConfig, LlamaForCausalLM, Phi3Config, Phi3ForCausalLM, PreTrainedTokenizerFast

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from scripts.make_hf_fixtures import DECODER, VOCAB, byte_bpe, enliven

OUT = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "hf_rope"
TEXTS = {
    "short": "The animal didn't cross.",
    "long": "The query asks, the keys answer, and the values come back weighted by how well each key fits.",
}
BASE = {**DECODER, "max_position_embeddings": 128, "rope_theta": 10000.0}


def cases():
    llama = dict(vocab_size=VOCAB, tie_word_embeddings=False, rms_norm_eps=1e-5, **BASE)
    yield "linear", LlamaForCausalLM(LlamaConfig(**llama, rope_parameters={"rope_type": "linear", "factor": 2.0}))
    dynamic = {**llama, "max_position_embeddings": 16}  # read far beyond it: the base grows with the length
    yield "dynamic", LlamaForCausalLM(LlamaConfig(**dynamic, rope_parameters={"rope_type": "dynamic", "factor": 8.0}))
    llama3 = {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
              "original_max_position_embeddings": 16}  # fmt: skip
    yield "llama3", LlamaForCausalLM(LlamaConfig(**llama, rope_parameters=llama3))
    yarn = {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32, "beta_fast": 32.0,
            "beta_slow": 1.0}  # fmt: skip
    yield "yarn", LlamaForCausalLM(LlamaConfig(**llama, rope_parameters=yarn))
    head_dim = BASE["hidden_size"] // BASE["num_attention_heads"]
    g = torch.Generator().manual_seed(7)
    short = (1 + torch.rand(head_dim // 2, generator=g)).tolist()
    long = (2 + 6 * torch.rand(head_dim // 2, generator=g)).tolist()
    longrope = {"rope_type": "longrope", "short_factor": short, "long_factor": long,
                "original_max_position_embeddings": 16}  # fmt: skip
    phi3 = dict(vocab_size=VOCAB, pad_token_id=0, original_max_position_embeddings=16, **BASE)  # Phi-3 keeps it apart
    yield "longrope", Phi3ForCausalLM(Phi3Config(**phi3, rope_parameters=longrope))


def main() -> None:
    only = set(sys.argv[1:])
    tok = byte_bpe(["<s>", "</s>", "<unk>"], wrap=None)
    for seed, (name, model) in enumerate(cases(), start=200):
        if only and name not in only:
            continue
        folder = OUT / name
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True)
        torch.manual_seed(seed)
        model.config._attn_implementation = "eager"
        enliven(model, seed)
        model.eval()
        fast = PreTrainedTokenizerFast(tokenizer_object=tok)
        reference = {}
        for key, text in TEXTS.items():
            ids = fast(text, return_tensors="pt")["input_ids"]
            with torch.no_grad():
                out = model(ids, output_attentions=True)
            reference[f"{key}.ids"] = ids[0]
            reference[f"{key}.attentions"] = torch.stack([a[0] for a in out.attentions]).contiguous()  # (L, H, N, N)
            reference[f"{key}.logits"] = out.logits[0, -4:].contiguous()  # (4, V): the last, past the original
        model.save_pretrained(folder)
        fast.save_pretrained(folder)
        for extra in ("tokenizer_config.json", "special_tokens_map.json", "generation_config.json"):
            (folder / extra).unlink(missing_ok=True)
        save_file(reference, str(folder / "reference.safetensors"))
        n = {k: len(reference[f"{k}.ids"]) for k in TEXTS}
        size = sum(f.stat().st_size for f in folder.iterdir())
        print(f"{name}: tokens {n}, rope {model.config.rope_parameters} ({size / 1024:.0f} KB)")


if __name__ == "__main__":
    main()
