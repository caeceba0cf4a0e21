"""The research instruments on SmolLM2 and the indirect-object prompt, on this machine: the logit lens, direct logit
attribution, each patching sweep, attribution and path patching, composition and a circuit card, in seconds (``python bench/causes.py``; figures in
bench/RESULTS.md, section "Research instruments")."""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from model.analysis.attribution import attribution_patching
from model.analysis.circuits import circuit
from model.analysis.composition import composition_scores, composition_with
from model.analysis.lens import direct_logit_attribution, logit_lens
from model.analysis.patching import Metric, activation_patching
from model.analysis.paths import path_patching
from model.io.catalog import ModelSpec, load

CLEAN = "When Mary and John went to the store, John gave a drink to"
CORRUPTED = "When Mary and John went to the store, Mary gave a drink to"


def timed(label: str, fn):
    began = time.perf_counter()
    out = fn()
    print(f"| {label} | {time.perf_counter() - began:.2f} s |")
    return out


def main() -> None:
    smol = load(ModelSpec("smollm2"))
    model, tok = smol.model, smol.tokenizer
    clean, corrupted = tok.encode(CLEAN).ids, tok.encode(CORRUPTED).ids
    mary, john = tok.inner.encode(" Mary").ids[0], tok.inner.encode(" John").ids[0]
    print(f"SmolLM2, {len(clean)} tokens\n\n| step | time |\n|---|---|")
    timed("logit lens, every position × 31 readings", lambda: logit_lens(model, clean, None, mary))
    timed("direct logit attribution", lambda: direct_logit_attribution(model, clean, mary, john))
    for kind in ("z", "resid_pre", "attn_out", "mlp_out"):
        timed(
            f"patching {kind}",
            lambda kind=kind: activation_patching(model, clean, corrupted, Metric(mary, john), [kind]),
        )
    metric = Metric(mary, john)
    timed("attribution patching, all four kinds", lambda: attribution_patching(model, clean, corrupted, metric))
    timed("path patching, every head → logits", lambda: path_patching(model, clean, corrupted, metric, "logits"))
    name_movers = [(23, 3, "v"), (29, 1, "v")]
    timed(
        "path patching, every head → L23H3, L29H1 values",
        lambda: path_patching(model, clean, corrupted, metric, name_movers),
    )
    timed("composition, one head (L17H4, K)", lambda: composition_with(model, 17, 4, "K"))
    timed("composition, every pair (K)", lambda: composition_scores(model, "K"))
    timed("circuit card (first, with U·E)", lambda: circuit(model, 23, 3, clean))
    timed("circuit card (next)", lambda: circuit(model, 29, 1, clean))


if __name__ == "__main__":
    main()
