"""The needle lesson's grid on SmolLM2: its haystacks built, then read and decoded, and the estimate its button shows.

    python bench/needle.py [--threads 2] [--lengths 512 1024 2048] [--depths 0 25 50 75 100] [--runs 1]

Per run: seconds to build every haystack (``haystack``), seconds of ``needle_grid`` in all (building included), the
positions read against the prompts' positions (a run reads only what follows the beginning its prompt shares with the
prompt read before it, ``model.analysis.needle.Prefix``), and the button's estimate (``seconds``, from one fused pass
of 512 tokens as the app times it: one of 128 tokens, times 4). Prints the host's float32 rate first
(bench/long.py), since every time here follows it; figures in bench/RESULTS.md, "The needle lesson reads a shared
beginning once".
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--lengths", type=int, nargs="+", default=[512, 1024, 2048])
    p.add_argument("--depths", type=int, nargs="+", default=[0, 25, 50, 75, 100], help="percent")
    p.add_argument("--runs", type=int, default=1)
    args = p.parse_args(argv)

    import torch

    from bench.long import host_gflops
    from model.analysis import needle
    from model.io.catalog import ModelSpec, load

    torch.set_num_threads(args.threads)
    smol = load(ModelSpec("smollm2"))
    model, tokenizer = smol.model.eval(), smol.tokenizer
    print(f"this host: {host_gflops():.0f} GFLOP/s in float32; {args.threads} torch threads")
    timed = {}
    with torch.no_grad():
        model(torch.zeros(1, 16, dtype=torch.long), fused=True)
        for n in (128, 512):  # the app's timing (viz/shell/needle.py: 128 tokens, times 4), and a pass of 512
            start = time.perf_counter()
            model(torch.zeros(1, n, dtype=torch.long), fused=True)
            timed[n] = (time.perf_counter() - start) * 512 / n
    depths = [d / 100 for d in args.depths]
    filler = needle.filler_text()
    estimate = needle.seconds(args.lengths, depths, timed[128])
    print(f"grid {args.lengths} × {args.depths} %: the button's estimate {estimate:.0f} s (a pass of 128 tokens × 4: "
          f"{timed[128]:.2f} s; a pass of 512: {timed[512]:.2f} s)\n")  # fmt: skip
    print("| run | haystacks built (s) | positions read / all | grid in all (s) |")
    print("| --- | --- | --- | --- |")
    for run in range(1, args.runs + 1):
        start = time.perf_counter()
        hays = [needle.haystack(tokenizer, filler, n, d) for n in args.lengths for d in depths]
        built = time.perf_counter() - start
        prompts = sorted(h.ids[:-1] for h in hays)
        read = sum(len(p) - s for p, s in zip(prompts, needle.shared_starts(prompts)))
        start = time.perf_counter()
        needle.needle_grid(model, tokenizer, filler, args.lengths, depths)
        grid = time.perf_counter() - start
        every = sum(len(x) for x in prompts)
        print(f"| {run} | {built:.1f} | {read:,} / {every:,} | {grid:.1f} |", flush=True)


if __name__ == "__main__":
    main()
