"""A cold server's first chart, `streamlit run app.py` against the classroom server `streamlit run serve.py`.

    python bench/cold_start.py [--starts 5]

Each start is a fresh server; the clock runs from the browser's request, made as soon as the server answers its
health check, until the attention map's heatmap is drawn (bench/pages.py's ``first_chart``). Also how long each
server took to answer at all. Prints a Markdown table (bench/RESULTS.md).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.pages import first_chart
from scripts.browser import chromium, streamlit_server


def starts(script: str, n: int, browser) -> tuple[list[float], list[float]]:
    charts, ready = [], []
    for _ in range(n):
        t = time.perf_counter()
        with streamlit_server(script=script) as url:
            ready.append(time.perf_counter() - t)
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            start = time.perf_counter()
            page.goto(url)
            charts.append(first_chart(page, start))
            page.close()
    return charts, ready


SCRIPTS = ("app.py", "serve.py")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--starts", type=int, default=5)
    args = ap.parse_args()
    print("| command | first chart, each start (s) | median (s) | server ready after (s) |")
    print("| --- | --- | --- | --- |")
    with chromium() as browser:
        for script in SCRIPTS:
            charts, ready = starts(script, args.starts, browser)
            shown = ", ".join(f"{c:.2f}" for c in charts)
            print(f"| streamlit run {script} | {shown} | {statistics.median(charts):.2f} | "
                  f"{statistics.median(ready):.2f} |")  # fmt: skip


if __name__ == "__main__":
    main()
