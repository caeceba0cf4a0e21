"""Attention Lab performance benchmark: prints a Markdown table and writes bench/RESULTS.md.

    python bench/run.py                 # CPU, everything (about 5 minutes on 2 cores)
    python bench/run.py --device cuda   # the same on a GPU
    python bench/run.py --quick         # fewer repeats, no browser

Not a test: it measures, prints figures and says which targets are met.
"""

from __future__ import annotations

import argparse
import os
import platform
import resource
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CLASS_MARKER = "# A class on one server"
sys.path.insert(0, str(ROOT))

import torch  # noqa: E402

from bench.measure import attention_vs_torch, browser_times, capture_overhead, end_to_end, long_sequences  # noqa: E402


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
