"""Attention Lab performance benchmark: prints a Markdown table and writes bench/RESULTS.md.

    python bench/run.py                 # CPU, everything (about 5 minutes on 2 cores)
    python bench/run.py --device cuda   # the same on a GPU
    python bench/run.py --quick         # fewer repeats, no browser

Not a test: it measures, prints figures and says which targets are met.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CLASS_MARKER = "# A class on one server"
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


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--no-browser", action="store_true")
    ap.add_argument("--out", default=str(ROOT / "bench" / "RESULTS.md"))
    args = ap.parse_args()
    if args.device.startswith("cuda") and not torch.cuda.is_available():
        sys.exit("CUDA is not available here")
    repeat = 3 if args.quick else 7
    from model.memory import keep_freed_memory

    allocator = keep_freed_memory()  # as app.py does
    lines = [
        "# Attention Lab benchmark",
        "",
        f"- command: `python bench/run.py {' '.join(sys.argv[1:])}`".replace("  ", " "),
        f"- date: {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}",
        f"- machine: {platform.machine()}, {os.cpu_count()} CPU cores, device {args.device}"
        + (f" ({torch.cuda.get_device_name()})" if args.device.startswith("cuda") else ""),
        f"- versions: python {platform.python_version()}, torch {torch.__version__}, torch threads "
        f"{torch.get_num_threads()}; glibc allocator tuned as in app.py: {allocator}",
        "",
    ]

    def emit(line: str = "") -> None:
        print(line, flush=True)
        lines.append(line)

    for line in lines:
        print(line)
    emit(f"## Capture overhead (median of {repeat * 3}, interleaved)")
    emit("| model | N | plain ms | full capture ms | ratio | selective ms | ratio |")
    emit("| --- | --- | --- | --- | --- | --- | --- |")
    cap = capture_overhead(args.device, repeat)
    for r in cap:
        emit(
            f"| {r['model']} | {r['N']} | {r['plain_ms']:.1f} | {r['full_ms']:.1f} | {r['full_ratio']:.2f}× | "
            f"{r['selective_ms']:.1f} | {r['selective_ratio']:.2f}× |"
        )
    att = attention_vs_torch(args.device, repeat)
    emit()
    emit(
        f"From-scratch attention vs torch SDPA, (1, 12, 512, 32): {att['ours_ms']:.2f} ms vs "
        f"{att['torch_ms']:.2f} ms = {att['ratio']:.2f}× (ours also returns the weights)"
    )
    emit()
    emit("## Text change and layer/head switch (server side)")
    emit(
        "| model | N | text change ms | layer/head switch ms | overview page ms | attention page payload MB | overview payload MB | "
        "head view MB | captured MiB |"
    )
    emit("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    e2e = end_to_end(args.device, repeat)
    for r in e2e:
        emit(
            f"| {r['model']} | {r['N']} | {r['text_change_ms']:.0f} | {r['switch_ms']:.0f} | {r['overview_ms']:.0f} | "
            f"{r['attention_payload_mb']:.2f} | {r['overview_payload_mb']:.2f} | {r['headview_payload_mb']:.2f} | "
            f"{r['capture_mb']:.0f} |"
        )
    emit()
    emit(
        "## Seed model (vocab 32000, d_model 256, 4 heads, 4 layers) at long lengths, selective capture "
        "(last layer's pattern, float16)"
    )
    emit("| N | seconds | peak RSS MB | GPU peak MB | captured MiB |")
    emit("| --- | --- | --- | --- | --- |")
    longs = long_sequences(args.device)
    for r in longs:
        if "error" in r:
            emit(f"| {r['N']} | failed: {r['error']} | | | |")
        else:
            emit(
                f"| {r['N']} | {r['seconds']:.2f} | {r['peak_rss_mb']:.0f} | {r['gpu_peak_mb']:.0f} | "
                f"{r['capture_mb']:.0f} |"
            )
    browser = {} if (args.no_browser or args.quick) else browser_times()
    if browser:
        from bench.pages import table

        emit()
        emit("## Every page in the browser (headless chromium, MiniLM; `python bench/pages.py`)")
        emit(
            "Seconds from the click on a page's link (or a section, or a layer in the open picker) until every chart on"
        )
        emit("the page is drawn.")
        emit()
        for line in (table(browser) if "error" not in browser else browser["error"]).splitlines():
            emit(line)
    emit()
    emit("## Targets")
    c512 = [r for r in cap if r["N"] == 512]
    m512 = [r for r in e2e if r["model"] == "minilm" and r["N"] == 512]
    checks = [
        (
            "capture overhead ≤ 1.10× at N=512 (full capture)",
            all(r["full_ratio"] <= 1.10 for r in c512),
            ", ".join(f"{r['model']} {r['full_ratio']:.2f}×" for r in c512),
        ),
        (
            "layer/head/page switch ≤ 100 ms server side at N=512, no forward pass",
            all(max(r["switch_ms"], r["overview_ms"]) <= 100 for r in e2e if r["N"] == 512),
            ", ".join(
                f"{r['model']}: switch {r['switch_ms']:.0f} ms, overview {r['overview_ms']:.0f} ms"
                for r in e2e
                if r["N"] == 512
            ),
        ),
        (
            "overview payload ≤ 10 MB for 6×12 heads at 512",
            all(r["overview_payload_mb"] <= 10 for r in m512),
            ", ".join(f"{r['overview_payload_mb']:.2f} MB" for r in m512),
        ),
        (
            "MiniLM end-to-end at 512 ≤ 1 s",
            all(r["text_change_ms"] <= 1000 for r in m512),
            ", ".join(f"{r['text_change_ms']:.0f} ms" for r in m512),
        ),
        (
            "seed model at 4096 tokens runs",
            all("error" not in r for r in longs),
            ", ".join(f"N={r['N']}: {'ok' if 'error' not in r else 'failed'}" for r in longs),
        ),
    ]
    if browser and "error" not in browser:
        worst = max((*browser["pages"][512].items(), *browser["sections"][512].items()), key=lambda kv: kv[1])
        checks += [
            ("every page drawn in chromium ≤ 1.5 s at 512", worst[1] <= 1.5, f"slowest: {worst[0]} {worst[1]:.2f} s"),
            (
                "layer change drawn ≤ 1 s at 512",
                browser["layer_change"][512] <= 1.0,
                f"{browser['layer_change'][512]:.2f} s",
            ),
            (
                "first chart on a cold server ≤ 4 s",
                browser["cold_first_chart"] <= 4.0,
                f"{browser['cold_first_chart']:.2f} s",
            ),
        ]
    for name, ok, detail in checks:
        emit(f"- {'met' if ok else 'NOT met'}: {name} — {detail}")
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    emit(f"\nPeak RSS of the benchmark process: {peak:.0f} MB")
    out = Path(args.out)
    kept = ""  # the classroom section (bench/load.py, soak.py, fairness.py) is measured separately: keep it
    if out.exists() and CLASS_MARKER in out.read_text(encoding="utf-8"):
        kept = "\n" + CLASS_MARKER + out.read_text(encoding="utf-8").split(CLASS_MARKER, 1)[1]
    out.write_text("\n".join(lines) + "\n" + kept, encoding="utf-8")
    print(f"\nwrote {args.out}")


if __name__ == "__main__":
    main()
