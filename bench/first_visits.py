"""First and second visits of the pages issue 29 names, in chromium, at 512 tokens: Head metrics and Beyond the
weights on SmolLM2 (first visits used to take 27–40 s), Masks, the attention map and Head metrics on MiniLM.

    python bench/first_visits.py [--tokens 512] [--repeat 2] [--model smollm2|minilm] [--pages Masks "Q / K / V"]

Each page is opened right after a new text (nothing of it cached: its first visit), then after another page
(its second visit, median of ``--repeat``): seconds from the click until every chart is drawn (bench/pages.py's
``timed``). Prints a Markdown table (bench/RESULTS.md, "First visits").
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.pages import link, submit, text_of, timed
from scripts.browser import choose, chromium, streamlit_server, wait_idle

CASES = {  # model label in the sidebar -> pages timed, special tokens it adds
    "SmolLM2-135M-Instruct (decoder LLM: GQA, RoPE, causal)": (["Head metrics", "Beyond the weights"], 0),
    "all-MiniLM-L6-v2": (["Attention map", "Masks", "Head metrics", "Beyond the weights"], 2),
}


def measure(n_tokens: int, repeat: int, model: str = "", pages: list[str] | None = None) -> list[tuple]:
    rows = []
    with streamlit_server() as url, chromium() as browser:
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        page.goto(url)
        wait_idle(page)
        for label, (titles, specials) in CASES.items():
            if model and not label.lower().startswith(model.lower()[:5]):
                continue
            titles = pages or titles
            choose(page, "Model source", label)
            for take, title in enumerate(titles):
                timed(page, link(page, "Tokens"), timeout=300)
                timed(page, submit(page, f"Visit {take}: " + text_of(n_tokens - 4 - specials)), timeout=300)
                first = timed(page, link(page, title), timeout=300)
                again = []
                for _ in range(repeat):
                    timed(page, link(page, "Tokens"), timeout=300)
                    again.append(timed(page, link(page, title), timeout=300))
                rows.append((label.split(" ")[0], title, first, statistics.median(again)))
                print(rows[-1], flush=True)
    return rows


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--tokens", type=int, default=512)
    p.add_argument("--repeat", type=int, default=2)
    p.add_argument("--model", default="", help="smollm2 or minilm (default: both)")
    p.add_argument("--pages", nargs="+", help="page titles as the menu names them (default: the issue's)")
    args = p.parse_args()
    rows = measure(args.tokens, args.repeat, args.model, args.pages)
    print(f"\n| model | page at {args.tokens} tokens | first visit (s) | second visit (s) |\n| --- | --- | --- | --- |")
    for model, title, first, again in rows:
        print(f"| {model} | {title} | {first:.2f} | {again:.2f} |")


if __name__ == "__main__":
    main()
