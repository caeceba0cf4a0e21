"""What bench/run.py measures: capture overhead, our attention against torch's, the server-side text change and
layer/head switch, long sequences in a subprocess, and the browser's page times (bench/pages.py)."""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from model.attention import scaled_dot_product_attention  # noqa: E402
from model.capture import run_with_cache  # noqa: E402
from model.io.catalog import ModelSpec, load  # noqa: E402
from model.observe import observe  # noqa: E402

WORDS = [
    "the",
    "quick",
    "brown",
    "fox",
    "jumps",
    "over",
    "the",
    "lazy",
    "dog",
    "while",
    "attention",
    "maps",
    "show",
    "which",
    "words",
    "look",
    "at",
    "which",
    "other",
    "words",
    "in",
    "every",
    "layer",
    "and",
    "head",
    "of",
    "the",
    "model",
]


def text_of(tokenizer, n_tokens: int) -> str:
    """A text that tokenises to exactly n_tokens (specials included) or more (then truncated)."""
    words = []
    while len(tokenizer.encode(" ".join(words)).ids) < n_tokens:
        words.append(WORDS[len(words) % len(WORDS)])
    return " ".join(words)


def timeit(fn, repeat: int, sync) -> float:
    fn()
    sync()
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        sync()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def interleaved(fns, repeat: int, sync) -> list[float]:
    """Median seconds of each function, calling them in turn (after one warm-up round)."""
    for fn in fns:
        fn()
    times: list[list[float]] = [[] for _ in fns]
    for _ in range(repeat):
        for i, fn in enumerate(fns):
            sync()
            t0 = time.perf_counter()
            fn()
            sync()
            times[i].append(time.perf_counter() - t0)
    return [statistics.median(t) for t in times]


def capture_overhead(device: str, repeat: int) -> list[dict]:
    rows = []
    sync = torch.cuda.synchronize if device.startswith("cuda") else (lambda: None)
    for name in ("minilm", "bundled"):
        m = load(ModelSpec(name))
        model = m.model.to(device)
        for n in (16, 128, 512):
            ids = torch.tensor([m.tokenizer.encode(text_of(m.tokenizer, n), max_len=n).ids], device=device)

            def plain():
                with torch.inference_mode():
                    model(ids)

            # interleaved, so that drift in the machine's speed hits all three alike
            t_plain, t_full, t_sel = interleaved(
                [
                    plain,
                    lambda: run_with_cache(model, ids),
                    lambda: run_with_cache(model, ids, kinds=["pattern"], layers=[0]),
                ],
                repeat * 3,
                sync,
            )
            rows.append(
                {
                    "model": name,
                    "N": ids.shape[1],
                    "plain_ms": t_plain * 1e3,
                    "full_ms": t_full * 1e3,
                    "selective_ms": t_sel * 1e3,
                    "full_ratio": t_full / t_plain,
                    "selective_ratio": t_sel / t_plain,
                }
            )
    return rows


def attention_vs_torch(device: str, repeat: int) -> dict:
    sync = torch.cuda.synchronize if device.startswith("cuda") else (lambda: None)
    g = torch.Generator(device=device).manual_seed(0)
    q, k, v = (torch.randn(1, 12, 512, 32, device=device, generator=g) for _ in range(3))
    with torch.inference_mode():
        ours = timeit(lambda: scaled_dot_product_attention(q, k, v), repeat, sync)
        ref = timeit(lambda: F.scaled_dot_product_attention(q, k, v), repeat, sync)
    return {"ours_ms": ours * 1e3, "torch_ms": ref * 1e3, "ratio": ours / ref}


def page_figures(src, layer: int, head: int):
    """The figures the attention page builds, through the same views (viz.views)."""
    from viz.figures import Theme
    from viz.views import build

    theme = Theme()
    return [
        build("attention", src, theme, layer=layer, head=head)[0].figure,
        build("heads", src, theme, layer=layer)[0].figure,
        build("mean", src, theme, layer=layer)[0].figure,
    ]


def overview_figure(src):
    """The model overview page's figure."""
    from viz.figures import Theme
    from viz.views import build

    return build("overview", src, Theme())[0].figure


def end_to_end(device: str, repeat: int) -> list[dict]:
    from viz.figures import Theme
    from viz.views import build
    from viz.views.source import DirectSource

    rows = []

    for name in ("minilm", "bundled"):
        m = load(ModelSpec(name))
        model = m.model.to(device)
        for n in (128, 512):
            text = text_of(m.tokenizer, n)

            def text_change():
                obs = observe(model, m.tokenizer, text, device=device)
                src = DirectSource(ModelSpec(name), m, obs)
                for f in page_figures(src, 0, 0):
                    f.to_json()
                return src

            t_text = timeit(text_change, repeat, lambda: None)
            src = text_change()
            a = src.obs

            def switch():  # a new layer/head on a cached observation: figures only, no forward pass
                return [f.to_json() for f in page_figures(src, a.n_layers - 1, a.n_heads - 1)]

            t_switch = timeit(switch, repeat, lambda: None)
            t_overview = timeit(lambda: overview_figure(src).to_json(), repeat, lambda: None)
            att, ov = page_figures(src, 0, 0), [overview_figure(src)]
            hv = build("headview", src, Theme(), threshold=0.1)[0].figure
            rows.append(
                {
                    "model": name,
                    "N": a.n_tokens,
                    "text_change_ms": t_text * 1e3,
                    "switch_ms": t_switch * 1e3,
                    "overview_ms": t_overview * 1e3,
                    "attention_payload_mb": sum(len(f.to_json()) for f in att) / 1e6,
                    "overview_payload_mb": len(ov[0].to_json()) / 1e6,
                    "headview_payload_mb": len(hv.to_json()) / 1e6,
                    "capture_mb": a.capture_bytes / 2**20,
                }
            )
    return rows


LONG_SCRIPT = r"""
import resource, sys, time, torch, json
sys.path.insert(0, {root!r})
from model.config import TransformerConfig
from model.transformer import Transformer
from model.capture import run_with_cache
n, device = {n}, {device!r}
cfg = TransformerConfig(vocab_size=32000, d_model=256, n_heads=4, n_layers=4, max_seq_len=n, dropout=0.0)
torch.manual_seed(0)
model = Transformer(cfg).eval().to(device)
ids = torch.randint(0, 32000, (1, n), device=device)
t0 = time.perf_counter()
hidden, trace = run_with_cache(model, ids, kinds=["pattern"], layers=[cfg.n_layers - 1], dtype=torch.float16)
if device.startswith("cuda"):
    torch.cuda.synchronize()
dt = time.perf_counter() - t0
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
gpu = torch.cuda.max_memory_allocated() / 2**20 if device.startswith("cuda") else 0.0
print(json.dumps({{"N": n, "seconds": dt, "peak_rss_mb": peak, "gpu_peak_mb": gpu, "capture_mb": trace.nbytes / 2**20}}))
"""


def long_sequences(device: str) -> list[dict]:
    rows = []
    for n in (2048, 4096):
        out = subprocess.run(
            [sys.executable, "-c", LONG_SCRIPT.format(root=str(ROOT), n=n, device=device)],
            capture_output=True,
            text=True,
            timeout=900,
        )
        if out.returncode != 0:
            rows.append({"N": n, "error": out.stderr.strip().splitlines()[-1][:200]})
        else:
            rows.append(json.loads(out.stdout.strip().splitlines()[-1]))
    return rows


def browser_times() -> dict:
    """Per-page times in headless chromium (bench/pages.py): click to every chart drawn, at 128 and 512 tokens."""
    from bench.pages import measure
    from scripts.browser import CHROMIUM

    if not Path(CHROMIUM).exists():
        return {"error": "no /usr/bin/chromium"}
    return measure([128, 512], "all-MiniLM-L6-v2", repeat=3)
