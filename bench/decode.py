"""SmolLM2's decoding step at growing caches, and the needle lesson's runs, which are mostly such steps.

    python bench/decode.py [--threads 2] [--caches 256 1000 2000] [--steps 24] [--runs 3]

A step: one new token through the model with P tokens in the KV cache (``model.kvcache.KVCache``), the median of
``--steps`` after four warm-ups, in milliseconds. The needle: ``needle_grid`` over lengths 512 and 1,024 at depths 0
and 100 % (four haystacks read, 4 × (extra + answer) greedy steps), in seconds. Prints the host's float32 rate first
(bench/long.py), since every time here follows it; figures in bench/RESULTS.md, "Decoding steps: the KV cache's room
and grouped-query heads".
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def step_ms(model, cached: int, steps: int) -> float:
    """Median milliseconds of a one-token step with ``cached`` tokens already in the cache."""
    import torch

    from model.attention import KVCache  # model/kvcache.py, re-exported (also where the code before it kept it)

    ids = torch.randint(100, 5000, (1, cached), generator=torch.Generator().manual_seed(cached))
    times = []
    with torch.inference_mode():
        cache = KVCache(model.cfg.n_layers)
        model(ids, cache=cache, fused=True)
        for i in range(steps + 4):
            start = time.perf_counter()
            model(torch.tensor([[200 + i]]), cache=cache)
            times.append(time.perf_counter() - start)
    return 1000 * statistics.median(times[4:])


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--caches", type=int, nargs="+", default=[256, 1000, 2000])
    p.add_argument("--steps", type=int, default=24)
    p.add_argument("--runs", type=int, default=3)
    args = p.parse_args(argv)

    import torch

    from bench.long import host_gflops
    from model.analysis.needle import filler_text, needle_grid
    from model.io.catalog import ModelSpec, load

    torch.set_num_threads(args.threads)
    smol = load(ModelSpec("smollm2"))
    model, tokenizer = smol.model.eval(), smol.tokenizer
    print(f"this host: {host_gflops():.0f} GFLOP/s in float32; {args.threads} torch threads\n")
    print("| run | " + " | ".join(f"step at {c:,} cached (ms)" for c in args.caches) + " | needle 2 × 2 (s) |")
    print("| --- |" + " --- |" * (len(args.caches) + 1))
    filler = filler_text()
    for run in range(1, args.runs + 1):
        steps = [step_ms(model, c, args.steps) for c in args.caches]
        start = time.perf_counter()
        needle_grid(model, tokenizer, filler, (512, 1024), (0.0, 1.0))
        grid = time.perf_counter() - start
        print(f"| {run} | " + " | ".join(f"{s:.1f}" for s in steps) + f" | {grid:.1f} |", flush=True)


if __name__ == "__main__":
    main()
