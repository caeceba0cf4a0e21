"""How fast is a corpus profile, and does it stall everyone else?

``python bench/corpus.py [--docs 1000] [--model minilm]`` — the bundled held-out documents (each cut to 128
tokens) through the corpus job (model/profile/job.py) at several batch sizes in float32, and at the best one
with the model in bfloat16 (with the largest metric difference it causes); then 20-token requests from three
"students" (model.observe.observe, a page's first chart) alone and while the corpus job runs on the same
shared model. Prints Markdown tables (bench/RESULTS.md, "Corpus profiles").
"""

from __future__ import annotations

import argparse
import copy
import statistics
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch

from model.io.catalog import ModelSpec, load
from model.observe import observe
from model.profile.corpus import bundled_documents
from model.profile.job import COLUMNS, profile_corpus

SHORT = "Student {i} asks question {n}: why does the cat sit on the mat today?"


def timed_profile(model, tok, docs, batch):
    t0 = time.perf_counter()
    frame = profile_corpus(model, tok, docs, batch_size=batch)
    return time.perf_counter() - t0, frame


def students(loaded, stop: threading.Event, latencies: list[float], n: int = 3) -> list[threading.Thread]:
    def student(i: int) -> None:
        k = 0
        while not stop.is_set():
            k += 1
            t0 = time.perf_counter()
            observe(loaded.model, loaded.tokenizer, SHORT.format(i=i, n=k))
            latencies.append(time.perf_counter() - t0)
            time.sleep(0.3)

    threads = [threading.Thread(target=student, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    return threads


def pct(values, q):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--docs", type=int, default=1000)
    p.add_argument("--model", default="minilm")
    p.add_argument("--batches", default="1,8,16,32,64")
    args = p.parse_args()
    torch.set_num_threads(torch.get_num_threads())
    loaded = load(ModelSpec(args.model))
    docs = bundled_documents()[: args.docs]
    tok = loaded.tokenizer
    lengths = [len(tok.encode(d, max_len=128)) for d in docs]
    print(f"{len(docs)} documents, {sum(lengths):,} tokens (mean {statistics.mean(lengths):.0f}, max {max(lengths)}); "
          f"{loaded.name}; torch threads {torch.get_num_threads()}\n")  # fmt: skip
    print("| batch | dtype | seconds | documents/s | max metric difference vs float32 |")
    print("|---|---|---|---|---|")
    results = {}
    for batch in [int(b) for b in args.batches.split(",")]:
        seconds, frame = timed_profile(loaded.model, tok, docs, batch)
        results[batch] = (seconds, frame)
        print(f"| {batch} | float32 | {seconds:.1f} | {len(docs) / seconds:.0f} | — |", flush=True)
    best = min(results, key=lambda b: results[b][0])
    half = copy.deepcopy(loaded.model).to(torch.bfloat16)
    seconds, frame = timed_profile(half, tok, docs, best)
    diff = max(float((frame[c] - results[best][1][c]).abs().max()) for c in COLUMNS if c != "mean_distance")
    print(f"| {best} | bfloat16 | {seconds:.1f} | {len(docs) / seconds:.0f} | {diff:.3f} |\n", flush=True)

    print("| 20-token requests (3 students, 0.3 s think time) | n | p50 s | p95 s | max s |")
    print("|---|---|---|---|---|")
    for label, with_corpus in (("alone", False), (f"beside a {len(docs)}-document corpus run", True)):
        stop, latencies = threading.Event(), []
        threads = students(loaded, stop, latencies)
        if with_corpus:
            seconds, _ = timed_profile(loaded.model, tok, docs, best)
        else:
            time.sleep(20)
        stop.set()
        for t in threads:
            t.join()
        print(f"| {label} | {len(latencies)} | {pct(latencies, 0.5):.2f} | {pct(latencies, 0.95):.2f} | "
              f"{max(latencies):.2f} |", flush=True)  # fmt: skip
    print(f"\nThe corpus run itself took {seconds:.1f} s with the students beside it.")


if __name__ == "__main__":
    main()
