"""Long context in a real browser: SmolLM2 reads 2,048 … 8,192 tokens of the bundled held-out documents whole.

    python bench/long.py [--tokens 2048 4096 8192] [--model SmolLM2] [--shots DIR]

For each length, from a new text submitted on the attention map: seconds until layer 0's whole-text heatmap is
drawn (tokenise, the fused forward pass keeping q and k up to layer 0, the layer streamed, figures, drawn in
chromium, while the pass goes on through the later layers), until the rest of layer 0's page is (every head of the
layer and their mean, as a reader of that page sees it), then, the last layer picked, until its map is drawn (the
whole pass, with what the page computed meanwhile: pages go first), and
until the model overview's thumbnails of every head are drawn (the fused kernel's block sums), and until the head
metrics page is drawn (the summary of every head, streamed in the background; pages go first), all five counted
from the text; then a head switch and a layer switch on the attention map (medians of 3), and the server's peak
resident memory (VmHWM). Prints a Markdown table
(bench/RESULTS.md, "Long context") under this host's float32 product rate (hosts differ by 2.5 × on it).
"""

from __future__ import annotations

import argparse
import re
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.pages import submit, timed
from scripts.browser import chromium, nav_to, streamlit_server, wait_idle

HEATMAP = ".js-plotly-plot .heatmaplayer image"
#: the head metrics page is drawn: its charts are there and no progress bar (the summary's) is left
METRICS_DRAWN = """() => {
  const app = document.querySelector('[data-testid="stApp"]');
  const title = Array.from(document.querySelectorAll('h1')).some(h => h.textContent.includes('Head metrics'));
  return title && app && app.dataset.testScriptState === 'notRunning' && !document.querySelector('[data-testid="stProgress"]')
    && document.querySelectorAll('[data-testid="stPlotlyChart"] .main-svg').length > 0;
}"""


def long_text(n_tokens: int, label: str) -> tuple[str, int]:
    """The bundled held-out documents, cut where the model's tokenizer reaches ``n_tokens`` tokens, and the model's
    number of layers."""
    from model.io.catalog import ModelSpec, load
    from model.profile.corpus import bundled_documents

    loaded = load(ModelSpec("smollm2" if "SmolLM" in label else "bundled"))
    text = "\n\n".join(bundled_documents())
    enc = loaded.tokenizer.encode(text, max_len=n_tokens)
    return text[: enc.offsets[-1][1]], loaded.model.cfg.n_layers


def peak_mb(pid: int) -> float:
    """The server's peak resident memory (VmHWM), MB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def wait_for(page, text: str, timeout: float) -> float:
    """Seconds until a chart whose title holds ``text`` is drawn."""
    start = time.perf_counter()
    page.locator(".js-plotly-plot .gtitle", has_text=text).first.wait_for(timeout=timeout * 1000)
    page.locator(HEATMAP).first.wait_for(timeout=timeout * 1000)
    return time.perf_counter() - start


def nav(page, title: str) -> None:
    nav_to(page, title)


def pick(page, label: str, value: int) -> None:
    box = page.get_by_label(label, exact=True).first
    box.click()
    page.keyboard.type(str(value))  # the list is long: typing filters it
    page.get_by_role("option", name=str(value), exact=True).click()


def measure(lengths: list[int], label: str, shots: Path | None) -> list[dict]:
    rows = []
    for n in lengths:  # a fresh server for each length: its peak memory is this text's alone
        with streamlit_server() as url, chromium() as browser:
            page = browser.new_page(viewport={"width": 1400, "height": 2400})
            page.goto(url)
            wait_idle(page)
            page.get_by_label("Model source").click()
            page.get_by_role("option", name=label).first.click()
            wait_idle(page)
            pid = server_pid()
            rows.append(one_length(page, n, label, shots, pid))
            print(rows[-1], flush=True)
    return rows


def one_length(page, n: int, label: str, shots: Path | None, pid: int) -> dict:
    text, layers = long_text(n, label)
    nav(page, "Attention map")
    wait_idle(page)
    start = time.perf_counter()
    submit(page, text)()
    wait_for(page, f"Layer 0, head 0 — attention weights, all {n:,} tokens", 600)
    drawn = time.perf_counter() - start  # layer 0 is drawn as soon as it is read
    wait_for(page, "Layer 0: mean over", 600)  # the page's last chart: every head of the layer above it
    whole = time.perf_counter() - start
    if shots:
        page.screenshot(path=str(shots / f"long-attention-{n}.png"), full_page=True)
    last = layers - 1
    pick(page, "Layer", last)  # the last layer: drawn once the whole pass is over
    wait_for(page, f"Layer {last}, head 0 — attention weights, all {n:,} tokens", 600)
    drawn_last = time.perf_counter() - start
    nav(page, "Model overview")
    overview = re.compile(rf"^(?!Layer ).*: every head, all {n:,} tokens")  # not the attention map's "Layer 0: …"
    page.locator(".js-plotly-plot .gtitle").filter(has_text=overview).first.wait_for(timeout=900_000)
    thumbs = time.perf_counter() - start
    wait_idle(page)
    if shots:
        page.screenshot(path=str(shots / f"long-overview-{n}.png"), full_page=True)
    nav(page, "Head metrics")  # drawn once every head is measured (the page shows the summary's progress till then)
    page.wait_for_function(METRICS_DRAWN, timeout=600_000, polling=100)
    metrics = time.perf_counter() - start  # from the text, as the maps and thumbnails
    if shots:
        page.screenshot(path=str(shots / f"long-metrics-{n}.png"), full_page=True)
    timed(page, lambda: nav(page, "Attention map"), timeout=300)
    heads, layers = [], []
    for h in (1, 2, 3):
        heads.append(timed(page, lambda h=h: pick(page, "Head", h), timeout=120))
    for layer in (5, 17, 29):
        layers.append(timed(page, lambda layer=layer: pick(page, "Layer", layer), timeout=120))
    return {
        "tokens": n, "map": drawn, "page": whole, "last": drawn_last, "thumbnails": thumbs, "metrics": metrics,
        "head": statistics.median(heads), "layer": statistics.median(layers), "peak_mb": peak_mb(pid),
    }  # fmt: skip


def host_gflops(repeat: int = 5) -> float:
    """This CPU's float32 matrix-product rate on the pass's commonest shape (the best of ``repeat``): hosts differ by
    2.5 × on it, and every time in the table with it."""
    import torch

    a, b = torch.randn(8192, 576), torch.randn(576, 1536)
    a @ b
    best = min(timed_once(lambda: a @ b) for _ in range(repeat))
    return 2 * 8192 * 576 * 1536 / best / 1e9


def timed_once(work) -> float:
    start = time.perf_counter()
    work()
    return time.perf_counter() - start


def server_pid() -> int:
    """The newest streamlit server's process id (started by streamlit_server)."""
    import subprocess

    out = subprocess.run(["pgrep", "-n", "-f", "streamlit run app.py"], capture_output=True, text=True).stdout
    return int(out.split()[0])


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--tokens", type=int, nargs="+", default=[2048, 4096, 8192])
    p.add_argument("--model", default="SmolLM2")
    p.add_argument("--shots", default="")
    args = p.parse_args()
    shots = Path(args.shots) if args.shots else None
    if shots:
        shots.mkdir(parents=True, exist_ok=True)
    rows = measure(args.tokens, args.model, shots)
    print(f"\nthis host: {host_gflops():.0f} GFLOP/s in float32 (an 8,192 × 576 by 576 × 1,536 product, SmolLM2's "
          "feed-forward at 8,192 tokens): the times below scale with it")  # fmt: skip
    print("\n| tokens | text → layer 0's map (s) | text → layer 0's page (s) | text → last layer's map (s) | text → all "
          "thumbnails (s) | text → head metrics (s) | head switch (s) | layer switch (s) | server peak RSS (MB) |\n| --- "
          "| --- | --- | --- | --- | --- | --- | --- | --- |")  # fmt: skip
    for r in rows:
        print(f"| {r['tokens']:,} | {r['map']:.1f} | {r['page']:.1f} | {r['last']:.1f} | {r['thumbnails']:.1f} | "
              f"{r['metrics']:.1f} | {r['head']:.2f} | {r['layer']:.2f} | {r['peak_mb']:,.0f} |")  # fmt: skip


if __name__ == "__main__":
    main()
