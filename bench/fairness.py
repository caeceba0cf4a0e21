"""Is the server fair under load? Short requests' latency, alone and beside a long analysis of the same model.

``python bench/fairness.py [--seconds 20]`` — every request goes through ``model.observe.observe``, the code path
of a page's first chart (forward pass + capture, metrics, arrays). Several "students" send 20-token texts with
a little think time; meanwhile one "student" keeps the same shared MiniLM busy with 512-token texts. Prints
p50/p95/max of the short requests in both situations. Captures on one model run side by side (no lock), so
what a long analysis costs the others is its share of the CPU.
"""

from __future__ import annotations

import argparse
import contextlib
import statistics
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch

from model.io.catalog import ModelSpec, load
from model.memory import keep_freed_memory
from model.observe import observe

SHORT = "Student {i} asks question {n}: why does the cat sit on the mat today?"  # about 20 tokens
LONG = " ".join(["The animal didn't cross the street because it was too tired."] * 45)  # > 512 tokens


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def run(loaded, seconds: float, students: int, with_long: bool, with_training: bool = False) -> dict:
    stop = time.perf_counter() + seconds
    latencies: list[float] = []
    long_runs: list[float] = []

    def student(i: int) -> None:
        n = 0
        while time.perf_counter() < stop:
            n += 1
            t0 = time.perf_counter()
            observe(loaded.model, loaded.tokenizer, SHORT.format(i=i, n=n))
            latencies.append(time.perf_counter() - t0)
            time.sleep(0.3)  # think time

    def long_one() -> None:
        n = 0
        while time.perf_counter() < stop:
            n += 1
            t0 = time.perf_counter()
            observe(loaded.model, loaded.tokenizer, f"{n} " + LONG)
            long_runs.append(time.perf_counter() - t0)

    def training() -> None:  # a "Watch it learn" run, as the page starts one (model/learn)
        from model.learn.loop import TrainSpec, train
        from model.long import Cancelled

        with contextlib.suppress(Cancelled):
            train(TrainSpec(steps=10**6), cancel=lambda: time.perf_counter() >= stop)

    threads = [threading.Thread(target=student, args=(i,)) for i in range(students)]
    if with_long:
        threads.append(threading.Thread(target=long_one))
    if with_training:
        threads.append(threading.Thread(target=training))
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return {
        "requests": len(latencies),
        "p50": statistics.median(latencies),
        "p95": percentile(latencies, 0.95),
        "max": max(latencies),
        "long_runs": len(long_runs),
        "long_s": statistics.median(long_runs) if long_runs else 0.0,
    }


def main(argv: list[str] | None = None) -> str:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seconds", type=float, default=20.0)
    p.add_argument("--students", type=int, default=4)
    args = p.parse_args(argv)
    keep_freed_memory()
    torch.set_num_threads(2)
    loaded = load(ModelSpec("minilm"))
    observe(loaded.model, loaded.tokenizer, "warm up")
    lines = [
        f"## Fair under load (`python bench/fairness.py`, MiniLM, {args.students} students sending ~20-token texts "
        f"with 0.3 s think time, {args.seconds:.0f} s each)",
        "| situation | short requests | p50 s | p95 s | max s | long 512-token runs (median s) |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    situations = {"alone": (False, False), "beside one student looping 512-token texts": (True, False),
                  "beside a Watch it learn training run": (False, True)}  # fmt: skip
    for situation, (with_long, with_training) in situations.items():
        r = run(loaded, args.seconds, args.students, with_long, with_training)
        long_cell = f"{r['long_runs']} ({r['long_s']:.2f})" if with_long else "—"
        lines.append(
            f"| {situation} | {r['requests']} | {r['p50']:.3f} | {r['p95']:.3f} | {r['max']:.3f} | {long_cell} |"
        )
    text = "\n".join(lines)
    print(text)
    return text


if __name__ == "__main__":
    main()
