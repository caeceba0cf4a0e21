"""What every "beyond the weights" method says about one token, in plain text (for notes and the README).

python scripts/mixing_report.py [--model minilm] [--text "..."] [--token it]

Prints the sink heads (share ≥ 0.5 on [CLS], [SEP], punctuation or position 0) and the head types, then how each
method ranks the tokens the chosen token draws from, and the methods' Spearman agreement.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np

from model.analysis.gradients import targets_for
from model.analysis.sinks import SINK_TARGETS, SINK_THRESHOLD, head_types, sink_shares
from model.io.catalog import ModelSpec
from viz.views.captions import rank_correlation
from viz.views.mixing import allowed_cells, method_shares
from viz.views.source import DirectSource

TEXT = "The animal didn't cross the street because it was too tired."


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--model", default="minilm")
    p.add_argument("--text", default=TEXT)
    p.add_argument("--token", default="it")
    args = p.parse_args()
    src = DirectSource.for_text(ModelSpec(args.model), args.text)
    obs = src.obs
    shares = sink_shares(obs.patterns, obs.tokens, obs.special, obs.causal)
    print(f"{src.loaded.name} on {args.text!r}\n")
    for target in SINK_TARGETS:
        heads = np.argwhere(shares[target] >= SINK_THRESHOLD)
        listed = ", ".join(f"L{a}H{b} ({shares[target][a, b]:.2f})" for a, b in heads)
        print(f"sinks on {target} (≥ {SINK_THRESHOLD}): {len(heads)}{': ' + listed if listed else ''}")
    types = head_types(obs.patterns, obs.tokens, obs.special, obs.causal)
    kinds, counts = np.unique(types, return_counts=True)
    print("head types: " + ", ".join(f"{k} {n}" for k, n in zip(kinds, counts, strict=True)))
    for layer, row in enumerate(types):
        print(f"  L{layer}: " + " ".join(f"{t:>8}" for t in row))
    i = obs.tokens.index(args.token)
    target = targets_for(src.loaded.model)[0]
    rows = method_shares(src, i, target)
    print(f"\nwhat {args.token!r} (token {i}) draws from; gradients of: {target}")
    for name, row in rows.items():
        order = np.argsort(-row, kind="stable")[:5]
        print(f"  {name:28s} " + ", ".join(f"{obs.tokens[j]} {row[j]:.2f}" for j in order))
    seen = np.flatnonzero(allowed_cells(src)[i])
    names = list(rows)
    print("\nSpearman ρ between methods (over the tokens it can see)")
    for a in names:
        print(f"  {a:28s} " + " ".join(f"{rank_correlation(rows[a][seen], rows[b][seen]):5.2f}" for b in names))


if __name__ == "__main__":
    main()
