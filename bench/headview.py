"""The full head view at 512 tokens with all 12 heads of MiniLM: payload and time to the drawn lines in chromium.

    python bench/headview.py [--tokens 512] [--layers 0 3 5] [--repeat 3]

For each layer: the lines at least 0.01 heavy (what the view sends; its slider's lowest setting), the payload
Streamlit would send (the component's JSON), and, in headless chromium on the same 2 cores, the milliseconds
from loading the view (the dashboard's own script, as a standalone page) until its canvas is drawn, then the median
redraw when a token is hovered. Also what the old payload (each query's 16 strongest keys) left out. Prints a
Markdown table (bench/RESULTS.md).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np

from bench.pages import text_of
from scripts.browser import chromium
from viz.figures.headview import LINE_FLOOR, head_view_data
from viz.figures.theme import Theme
from viz.notebook import HeadView, source


def old_cap_kept(patterns: np.ndarray, per_row: int = 16) -> int:
    """Lines ≥ 0.01 the old payload sent: each query's 16 strongest keys, those ≥ 0.01."""
    top = -np.sort(-patterns, axis=-1)[..., :per_row]  # (H, N, 16)
    return int((top >= LINE_FLOOR).sum())


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--tokens", type=int, default=512)
    p.add_argument("--layers", type=int, nargs="+", default=[0, 3, 5])
    p.add_argument("--repeat", type=int, default=3)
    args = p.parse_args()
    obs = source("minilm", text_of(args.tokens - 2)).obs
    rows = []
    with chromium() as browser, tempfile.TemporaryDirectory() as tmp:
        for layer in args.layers:
            patterns = obs.patterns[layer]  # (12, N, N)
            data = head_view_data(patterns, obs.tokens, list(range(obs.n_heads)), LINE_FLOOR, Theme())
            path = Path(tmp) / f"hv{layer}.html"
            path.write_text(HeadView(data).html(), encoding="utf-8")
            loads, hovers = [], []
            for _ in range(args.repeat):
                page = browser.new_page(viewport={"width": 1400, "height": 1000})
                start = time.perf_counter()
                page.goto(path.as_uri())
                page.wait_for_function("document.querySelector('.al-hv')?.dataset.lines > 0")
                loads.append(time.perf_counter() - start)
                box = page.locator("canvas.al-hv-canvas").bounding_box()
                for i in range(5):
                    page.mouse.move(box["x"] + 20, box["y"] + 4 + 20 * (3 + i) + 10)
                    page.wait_for_function(f"document.querySelector('.al-hv').dataset.active == 'query:{3 + i}'")
                    page.wait_for_timeout(50)
                    hovers.append(float(page.locator(".al-hv").get_attribute("data-draw-ms")))
                drawn = int(page.locator(".al-hv").get_attribute("data-lines"))
                page.close()
            total = int((patterns >= LINE_FLOOR).sum())
            assert drawn == total, (drawn, total)
            rows.append((layer, len(obs.tokens), total, old_cap_kept(patterns), len(json.dumps([data])) / 1e6,
                         statistics.median(loads), statistics.median(hovers)))  # fmt: skip
            print(rows[-1], flush=True)
    print("\n| layer | tokens | lines ≥ 0.01 (all drawn) | the old 16-per-query cap sent | payload MB | "
          "page to drawn s | hover redraw ms |\n| --- | --- | --- | --- | --- | --- | --- |")  # fmt: skip
    for layer, n, total, kept, mb, load, hover in rows:
        print(
            f"| {layer} | {n} | {total:,} | {kept:,} ({100 * (total - kept) / total:.0f} % missing) | {mb:.2f} | "
            f"{load:.2f} | {hover:.1f} |"
        )


if __name__ == "__main__":
    main()
