"""A causal model's activation patching with and without starting each batch of runs at its first patched position:
SmolLM2 on the indirect-object prompt (bench/causes.py) repeated ``--repeat`` times, one position kind, the two ways
alternating (``python bench/patch_prefix.py --repeat 5``; figures in bench/RESULTS.md, "Patching: the relative
bias, and a causal model's runs from the patched position"). Prints a Markdown table and the largest difference."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.causes import CLEAN, CORRUPTED
from model.analysis.patching import POSITION_KINDS, Metric, cache_run, patch_sweep
from model.io.catalog import ModelSpec, load


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeat", type=int, default=5, help="copies of the prompt (the last one corrupted)")
    p.add_argument("--kind", default="resid_pre", choices=POSITION_KINDS)
    p.add_argument("--runs", type=int, default=2, help="runs of each way")
    args = p.parse_args(argv)
    smol = load(ModelSpec("smollm2"))
    model, tok = smol.model, smol.tokenizer
    clean = tok.encode(" ".join([CLEAN] * args.repeat)).ids
    corrupted = tok.encode(" ".join([CLEAN] * (args.repeat - 1) + [CORRUPTED])).ids
    mary, john = tok.inner.encode(" Mary").ids[0], tok.inner.encode(" John").ids[0]
    metric, donor = Metric(mary, john), cache_run(model, clean)
    times: dict[bool, list[float]] = {False: [], True: []}
    cells: dict[bool, np.ndarray] = {}
    for _ in range(args.runs):
        for prefix in (False, True):
            began = time.perf_counter()
            receiver = cache_run(model, corrupted, keys=prefix)  # keys: the runs start at their first position
            cells[prefix] = patch_sweep(model, receiver, donor, metric, [args.kind])[args.kind]
            times[prefix].append(time.perf_counter() - began)
    print(f"SmolLM2, {len(clean)} tokens, {args.kind}\n")
    print("| whole text | from each batch's first position |\n| --- | --- |")
    print(f"| {', '.join(f'{t:.1f}' for t in times[False])} s | {', '.join(f'{t:.1f}' for t in times[True])} s |")
    print(f"\nlargest difference between the two: {float(np.abs(cells[True] - cells[False]).max()):.2g}")


if __name__ == "__main__":
    main()
