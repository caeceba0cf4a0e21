"""What a second visit sends again: websocket bytes from the server per page visit, first and second time.

    python bench/resend.py [--tokens 128] [--model all-MiniLM-L6-v2] [--pages "Model overview" "Attention map"]

Streamlit sends an element again as a reference to the browser's copy when its message is byte-for-byte the one
sent before (its hash is in the browser's cache); anything that differs between two visits (a random id, a
timestamp, an unordered set) makes it send the whole element. Chromium on a real server; prints a Markdown table.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.pages import link, submit, text_of, timed
from scripts.browser import choose, chromium, streamlit_server, wait_idle


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--tokens", type=int, default=128)
    p.add_argument("--model", default="", help="the model's label in the sidebar (default: the bundled model)")
    p.add_argument("--pages", nargs="+", default=["Model overview", "Attention map", "Q / K / V", "Head view"])
    args = p.parse_args()
    received: list[int] = []
    rows = []
    with streamlit_server() as url, chromium() as browser:
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        page.on("websocket", lambda ws: ws.on("framereceived", lambda frame: received.append(len(frame))))
        page.goto(url)
        wait_idle(page)
        if args.model:
            choose(page, "Model source", args.model)
        timed(page, link(page, "Tokens"), timeout=300)
        timed(page, submit(page, text_of(args.tokens - 2)), timeout=300)
        for title in args.pages:
            sizes = []
            for _ in range(2):
                timed(page, link(page, "Tokens"), timeout=300)
                received.clear()
                timed(page, link(page, title), timeout=300)
                sizes.append(sum(received))
            rows.append((title, *sizes))
            print(rows[-1], flush=True)
    print(f"\n| page at {args.tokens} tokens | first visit kB | second visit kB |\n| --- | --- | --- |")
    for title, first, second in rows:
        print(f"| {title} | {first / 1e3:,.1f} | {second / 1e3:,.1f} |")


if __name__ == "__main__":
    main()
