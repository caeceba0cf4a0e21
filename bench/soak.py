"""Soak: many distinct texts through the app's shared caches; memory must stay flat once the budget is full.

``python bench/soak.py [--texts 1000] [--budget-mb 512]`` runs each text through the services layer the pages
use (``viz/shell/services.py``: the model cache, the observation cache, built views) on the bundled model,
MiniLM and a random init in turn, and prints the process RSS, the cache's bytes and its evictions every 100
texts. With the byte budget the RSS levels off after warm-up instead of growing with every new text.
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def main(argv: list[str] | None = None) -> str:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--texts", type=int, default=1000)
    p.add_argument("--budget-mb", type=float, default=512)
    args = p.parse_args(argv)
    os.environ["ATTENTION_LAB_CACHE_MB"] = str(args.budget_mb)  # read when viz.shell.cache is first imported

    import torch

    from model.io.catalog import ModelSpec
    from model.memory import keep_freed_memory
    from model.observe import Options
    from model.train.english import PROBE_SENTENCES
    from viz.figures.theme import Theme
    from viz.shell import services
    from viz.shell.cache import CACHE
    from viz.shell.source import CachedSource

    keep_freed_memory()
    torch.set_num_threads(2)
    specs = [ModelSpec("bundled"), ModelSpec("minilm"), ModelSpec("random", n_layers=4, n_heads=4, d_model=256, seed=0)]
    rng = random.Random(0)
    lines = [
        f"## Soak (`python bench/soak.py --texts {args.texts} --budget-mb {args.budget_mb:.0f}`): distinct texts "
        "through the shared caches, three models in turn",
        "| texts | seconds | RSS MB | cache MB | cache entries | evictions |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    t0 = time.perf_counter()
    for n in range(1, args.texts + 1):
        spec = specs[n % len(specs)]
        words = rng.choices(" ".join(PROBE_SENTENCES).split(), k=rng.randint(10, 200))
        text = f"text {n}: " + " ".join(words)
        loaded = services.get_model(spec, "cpu")
        obs = services.get_observation(spec, "cpu", text, Options(), loaded)
        src = CachedSource(spec, loaded, obs, Options(), False, "cpu")
        for key, selection in (("attention", (("layer", 0), ("head", 0))), ("overview", ())):
            whole = False  # the first tokens, as the pages draw them
            services._cached_views(spec, "cpu", text, Options(), False, whole, Theme(), key, selection, src)
        if n % 100 == 0 or n == args.texts:
            row = (
                f"| {n} | {time.perf_counter() - t0:.0f} | {rss_mb():.0f} | {CACHE.nbytes / 2**20:.0f} | "
                f"{len(CACHE)} | {CACHE.evictions} |"
            )
            lines.append(row)
            print(row, flush=True)
    text = "\n".join(lines)
    print(text)
    return text


if __name__ == "__main__":
    main()
