"""First and repeat visits of the "Beyond the weights" sections in a real browser, where the analyses are
computed on the first visit (norm-based, ALTI, value zeroing up to 160 tokens, gradients).

    python bench/mixing_pages.py [--tokens 16 128 512] [--model all-MiniLM-L6-v2]

Seconds from the click until every chart is drawn (bench/pages.py's ``timed``): the first visit of each
section for a text the server has not analysed (with the press of the button a long measurement waits for), then
the median of 3 repeat visits. Prints a Markdown table.
"""

from __future__ import annotations

import argparse
import re
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.pages import link, radio, text_of, timed
from scripts.browser import chromium, streamlit_server, type_text, wait_idle
from viz.settings import MIXING_SECTIONS

TITLE = "Beyond the weights"
ASKED = re.compile(r"\(about [\d.]+(–[\d.]+)? s\)$")  # the button a long measurement waits for


def measured(page, action) -> float:
    """``timed(page, action)``, plus pressing the button the section shows before a long measurement, if it shows
    one (the seconds a user waits for the charts either way; the time spent reading the question not counted)."""
    seconds = timed(page, action)
    button = page.get_by_role("button", name=ASKED)
    if button.count():
        seconds += timed(page, button.first.click, timeout=300.0)
    return seconds


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--tokens", type=int, nargs="+", default=[16, 128, 512])
    p.add_argument("--model", default="all-MiniLM-L6-v2 (pretrained BERT-family)")
    args = p.parse_args()
    rows = {}
    with streamlit_server() as url, chromium() as browser:
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        page.goto(url)
        wait_idle(page)
        page.get_by_label("Model source").click()
        page.get_by_role("option", name=args.model).click()
        wait_idle(page)
        for n in args.tokens:
            timed(page, link(page, "Attention map"))  # typed there, so nothing of this page is computed yet
            type_text(page, text_of(n - 2))
            first = {MIXING_SECTIONS[0]: measured(page, link(page, TITLE))}
            for name in MIXING_SECTIONS[1:]:
                first[name] = measured(page, radio(page, name))
            for i, name in enumerate(MIXING_SECTIONS):
                other = MIXING_SECTIONS[(i + 1) % len(MIXING_SECTIONS)]
                again = []
                for _ in range(3):
                    timed(page, radio(page, other))
                    again.append(timed(page, radio(page, name)))
                rows.setdefault(name, {})[n] = (first[name], statistics.median(again))
            timed(page, radio(page, MIXING_SECTIONS[0]))
    print("| section | " + " | ".join(f"{n} tokens: first / again (s)" for n in args.tokens) + " |")
    print("| --- |" + " --- |" * len(args.tokens))
    for name, by_n in rows.items():
        print(f"| {name} | " + " | ".join(f"{by_n[n][0]:.2f} / {by_n[n][1]:.2f}" for n in args.tokens) + " |")


if __name__ == "__main__":
    main()
