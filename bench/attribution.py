"""Attribution patching against activation patching on SmolLM2 and indirect-object prompts: how well the one-pass
estimate agrees with the real sweep (Pearson's r per kind), and what each costs here.

    python bench/attribution.py                   # 50 prompts, every head's output z
    python bench/attribution.py --prompts 10 --kinds z,resid_pre,attn_out,mlp_out
    python bench/attribution.py --figure assets/screenshots/research/attribution-vs-patching.png

Figures in bench/RESULTS.md, section "Attribution patching"; the figure is shown in docs/research.md.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from model.analysis.attribution import attribution_patching
from model.analysis.ioi import ioi_batch
from model.analysis.patching import activation_patching
from model.io.catalog import ModelSpec, load


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--prompts", type=int, default=50)
    parser.add_argument("--kinds", default="z")
    parser.add_argument("--figure", type=Path, help="write the z scatter (estimate against real) as a PNG")
    args = parser.parse_args()
    kinds = args.kinds.split(",")
    smol = load(ModelSpec("smollm2"))
    model, tok = smol.model, smol.tokenizer
    batch = ioi_batch(lambda s: tok.inner.encode(s, add_special_tokens=False).ids, args.prompts)
    began = time.perf_counter()
    guess = attribution_patching(model, batch.clean, batch.corrupted, batch.metric, kinds)
    t_guess = time.perf_counter() - began
    began = time.perf_counter()
    real = activation_patching(model, batch.clean, batch.corrupted, batch.metric, kinds)
    t_real = time.perf_counter() - began
    print(f"SmolLM2, {args.prompts} IOI prompts of {len(batch.clean[0])} tokens, logit difference")
    print(f"clean {real.clean:.2f}, corrupted {real.corrupted:.2f}")
    print(f"attribution patching {t_guess:.1f} s, activation patching {t_real:.1f} s\n")
    print("| kind | cells | Pearson's r | top 3 (real) | top 3 (estimate) |\n|---|---|---|---|---|")
    for kind in kinds:
        a, b = real.recovered(kind), guess.recovered(kind)
        names = [f"L{i}H{h}" if kind == "z" else f"L{i}@{h}" for i in range(a.shape[0]) for h in range(a.shape[1])]
        r = np.corrcoef(a.ravel(), b.ravel())[0, 1]
        top = lambda v: ", ".join(f"{names[i]} {v.ravel()[i]:+.2f}" for i in np.argsort(-v.ravel())[:3])  # noqa: E731
        print(f"| {kind} | {a.size} | {r:.3f} | {top(a)} | {top(b)} |")
    if args.figure and "z" in kinds:
        from viz.export.render import render_image
        from viz.figures.charts import agreement_scatter

        a, b = real.recovered("z"), guess.recovered("z")
        names = [f"L{i}H{h}" for i in range(a.shape[0]) for h in range(a.shape[1])]
        r = np.corrcoef(a.ravel(), b.ravel())[0, 1]
        fig = agreement_scatter(
            a,
            b,
            names,
            x_title="activation patching (recovered)",
            y_title="attribution patching (estimate)",
            title=f"SmolLM2, {args.prompts} IOI prompts: every head's output, r = {r:.2f}",
        )
        args.figure.parent.mkdir(parents=True, exist_ok=True)
        args.figure.write_bytes(render_image(fig, "png", scale=2))
        print(f"\nwrote {args.figure}")


if __name__ == "__main__":
    main()
