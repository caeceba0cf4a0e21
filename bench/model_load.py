"""Each catalog model's load: seconds and peak memory, each in a fresh Python process (as a server's first load).

    python bench/model_load.py [--repeat 3] [--models bundled minilm smollm2 gemma3 mpnet]

The child imports torch, then times ``model.io.catalog.load(ModelSpec(kind))`` (reading, dequantising, building
the tokenizer); the peak is the child's maximum resident set (``ru_maxrss``, the figure ``/usr/bin/time -v``
prints), torch's own 220 MB included. Models that are not installed are skipped. Prints a Markdown table
(bench/RESULTS.md, "Model loads"; docs/models.md quotes it).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CHILD = """
import json, resource, sys, time
import torch
from model.io.catalog import ModelSpec, available, load
ok, why = available(sys.argv[1])
if not ok:
    print(json.dumps({"skip": why})); sys.exit(0)
t = time.perf_counter()
loaded = load(ModelSpec(sys.argv[1]))
seconds = time.perf_counter() - t
params = sum(p.numel() for p in loaded.model.parameters())
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB, this process's peak
print(json.dumps({"seconds": seconds, "params": params, "peak_kib": peak}))
"""


def one(kind: str) -> dict:
    out = subprocess.run([sys.executable, "-c", CHILD, kind], cwd=ROOT, capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--models", nargs="+", default=["bundled", "minilm", "mpnet", "smollm2", "gemma3"])
    args = p.parse_args()
    print("| model | parameters | load s (median) | peak RSS MiB |\n| --- | --- | --- | --- |")
    for kind in args.models:
        runs = [one(kind) for _ in range(args.repeat)]
        if "skip" in runs[0]:
            print(f"| {kind} | not installed: {runs[0]['skip']} | | |")
            continue
        peak = f"{max(r['peak_kib'] for r in runs) / 1024:,.0f}"
        seconds = statistics.median(r["seconds"] for r in runs)
        print(f"| {kind} | {runs[0]['params']:,} | {seconds:.1f} | {peak} |", flush=True)


if __name__ == "__main__":
    main()
