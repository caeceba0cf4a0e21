"""Print the parity figures of every Hugging Face family fixture — the largest difference from what transformers
computed in any attention weight and in the output (logits or last hidden state) — as the rows of the tables in
docs/checkpoints.md and the README (no transformers needed: the references are committed):

    python scripts/parity_table.py [family …]
"""

from __future__ import annotations

import sys
from pathlib import Path

import torch
from safetensors.torch import load_file

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from model.capture import run_with_cache
from model.io.checkpoint import load_checkpoint
from model.io.families.encdec import open_stack

FIXTURES = Path(__file__).resolve().parents[1] / "tests" / "fixtures"
PAIRS = {
    "short": ("The animal didn't cross the street because it was too tired.", "The animal was tired."),
    "long": (
        "The query asks, the keys answer, and the values come back weighted by how well each key fits the query.",
        "Each key answers the query, and the values come back weighted.",
    ),
}


def fmt(x: float) -> str:
    return "0" if x == 0 else f"{x:.1e}"


def single(folder: Path) -> tuple[float, float, str]:
    loaded, ref = load_checkpoint(folder), load_file(str(folder / "reference.safetensors"))
    attn = out = 0.0
    for key in ("short", "long"):
        if f"{key}.ids" not in ref:
            continue
        hidden, trace = run_with_cache(loaded.model, ref[f"{key}.ids"][None], kinds=["pattern"])
        for layer in range(loaded.model.cfg.n_layers):
            attn = max(attn, float((trace.get("pattern", layer)[0] - ref[f"{key}.attentions"][layer]).abs().max()))
        with torch.inference_mode():
            model = loaded.model
            if model.cfg.lm_head:
                got, want, what = model.lm_logits(hidden)[0], ref[f"{key}.logits"], "logits"
            elif model.cfg.mlm_head and f"{key}.logits" in ref:
                got, want, what = model.mlm_logits(hidden)[0], ref[f"{key}.logits"], "MLM logits"
            else:
                got, want, what = hidden[0], ref[f"{key}.hidden"], "hidden"
        out = max(out, float((got - want).abs().max()))
    return attn, out, what


def pair(folder: Path) -> tuple[float, float, float, float]:
    loaded, ref = load_checkpoint(folder), load_file(str(folder / "reference.safetensors"))
    enc_attn = cross = hidden_d = logits_d = 0.0
    for key, (source, _) in PAIRS.items():
        enc = open_stack(loaded, "encoder")
        hidden, trace = run_with_cache(enc.model, ref[f"{key}.ids"][None], kinds=["pattern"])
        for layer in range(enc.model.cfg.n_layers):
            d = (trace.get("pattern", layer)[0] - ref[f"{key}.encoder_attentions"][layer]).abs().max()
            enc_attn = max(enc_attn, float(d))
        hidden_d = max(hidden_d, float((hidden[0] - ref[f"{key}.encoder_hidden"]).abs().max()))
        dec = open_stack(loaded, "decoder", source)
        hidden, trace = run_with_cache(dec.model, ref[f"{key}.decoder_ids"][None], kinds=["pattern", "cross_pattern"])
        for layer in range(dec.model.cfg.n_layers):
            d = (trace.get("pattern", layer)[0] - ref[f"{key}.decoder_attentions"][layer]).abs().max()
            enc_attn = max(enc_attn, float(d))
            cross = max(
                cross, float((trace.get("cross_pattern", layer)[0] - ref[f"{key}.cross_attentions"][layer]).abs().max())
            )
        with torch.inference_mode():
            logits_d = max(logits_d, float((dec.model.lm_logits(hidden)[0] - ref[f"{key}.logits"]).abs().max()))
    return enc_attn, cross, hidden_d, logits_d


def main() -> None:
    only = set(sys.argv[1:])
    for group in ("hf", "hf_heads"):
        for folder in sorted((FIXTURES / group).iterdir()):
            if (folder / "config.json").is_file() and (not only or folder.name in only):
                attn, out, what = single(folder)
                print(f"| {group}/{folder.name} | {fmt(attn)} | {fmt(out)} ({what}) |")
    for folder in sorted((FIXTURES / "hf_encdec").iterdir()):
        if (folder / "config.json").is_file() and (not only or folder.name in only):
            a, c, h, lg = pair(folder)
            print(f"| {folder.name} | self {fmt(a)} | cross {fmt(c)} | encoder state {fmt(h)} | logits {fmt(lg)} |")


if __name__ == "__main__":
    main()
