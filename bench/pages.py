"""Per-page timing in a real browser: from the click on a page's link until every chart on it is drawn.

    python bench/pages.py [--tokens 128 512] [--model all-MiniLM-L6-v2] [--repeat 3] [--out results.json]

For each page (and each section of pages shown one section at a time): the time from the click until the
app's run has finished (Streamlit's ``data-test-script-state``) and every chart on the page is drawn and
stays drawn — on repeat visits, the text's observation already cached (median of ``--repeat``). Also a layer
change on the attention map, and a cold server's first chart. Prints a Markdown table.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from scripts.browser import PAGES, chromium, nav_to, streamlit_server, type_text, wait_idle
from viz.settings import LESSON_SECTIONS, MIXING_SECTIONS, PE_SECTIONS, QKV_SECTIONS

SETTLE = 0.3  # seconds the page must stay drawn to count as done
#: pages whose parts are shown one at a time: each part is timed too
SECTIONS = {
    "Q / K / V": QKV_SECTIONS,
    "Positional encodings": PE_SECTIONS,
    "Lessons": LESSON_SECTIONS,
    "Beyond the weights": MIXING_SECTIONS,
}
DRAWN_JS = """() => {
  const app = document.querySelector('[data-testid="stApp"]');
  if (!app || app.dataset.testScriptState !== 'notRunning') return false;
  if (document.querySelector('[data-testid="stSkeleton"]')) return false;
  return Array.from(document.querySelectorAll('[data-testid="stPlotlyChart"]'))
    .every(c => c.querySelector('.main-svg .plot, .main-svg .layer-above, .main-svg .cartesianlayer'));
}"""


WATCH_RUNS = """() => {
  const app = document.querySelector('[data-testid="stApp"]');
  window.__alRuns = 0;
  window.__alObserver?.disconnect();
  window.__alObserver = new MutationObserver(() => {
    if (app.dataset.testScriptState === 'running') window.__alRuns++;
  });
  window.__alObserver.observe(app, {attributes: true, attributeFilter: ['data-test-script-state']});
}"""


def timed(page, action, timeout: float = 60.0) -> float:
    """Seconds from ``action()`` until the run it triggers has finished and the page is drawn (and stayed
    drawn SETTLE seconds). Runs are counted by watching Streamlit's script state, so a run that starts and
    ends while the click is still being dispatched is not missed."""
    page.evaluate(WATCH_RUNS)
    start = time.perf_counter()
    action()
    while time.perf_counter() - start < 5.0 and not page.evaluate("() => window.__alRuns > 0"):
        page.wait_for_timeout(5)
    first = None
    while time.perf_counter() - start < timeout:
        if page.evaluate(DRAWN_JS):
            first = first or time.perf_counter()
            if time.perf_counter() - first >= SETTLE:
                return first - start
        else:
            first = None
        page.wait_for_timeout(20)
    raise TimeoutError("the page did not finish drawing")


def first_chart(page, start: float, timeout: float = 120.0) -> float:
    """Seconds until the attention map's heatmap is drawn (not any chart: a cold server first shows an empty
    one so that the browser loads its chart code while the server imports torch)."""
    while time.perf_counter() - start < timeout:
        if page.locator(".js-plotly-plot .heatmaplayer image").count():
            return time.perf_counter() - start
        page.wait_for_timeout(20)
    raise TimeoutError("no chart appeared")


def text_of(n_tokens: int) -> str:
    words = [
        "the",
        "animal",
        "did",
        "not",
        "cross",
        "the",
        "street",
        "because",
        "it",
        "was",
        "too",
        "tired",
        "and",
        "the",
        "rain",
        "kept",
        "falling",
        "on",
    ]
    return " ".join(words[i % len(words)] for i in range(n_tokens))


def link(page, title: str):
    return lambda: nav_to(page, title)  # through the top bar's menu (a click that opens it, drawn in the browser)


def radio(page, name: str):
    return lambda: page.get_by_role("radio", name=name, exact=True).first.click()


def pick_layer(page, layer: int):
    """Choosing a layer: the dropdown is opened first (not timed), then the option's click is timed."""

    def action():
        page.get_by_role("option", name=str(layer), exact=True).click()

    def run() -> float:
        page.get_by_label("Layer", exact=True).first.click()
        page.get_by_role("option", name=str(layer), exact=True).wait_for()
        return timed(page, action)

    return run


def median_of(page, action, repeat: int, between=None) -> float:
    times = []
    for _ in range(repeat):
        if between:
            between()
        times.append(timed(page, action))
    return statistics.median(times)


def submit(page, text: str):
    """Typing a new text and submitting it (Ctrl+Enter); the run it starts is what ``timed`` waits for."""

    def action():
        area = page.get_by_label("Text to analyse")
        area.fill(text)
        area.press("Control+Enter")

    return action


def measure(n_tokens: list[int], model_label: str, repeat: int) -> dict:
    results: dict = {"pages": {}, "sections": {}, "layer_change": {}, "text_change": {}, "repeat": repeat}
    specials = 0 if "SmolLM" in model_label else 2  # BERT-style models add [CLS] and [SEP]
    with streamlit_server() as url, chromium() as browser:
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        start = time.perf_counter()
        page.goto(url)
        results["cold_first_chart"] = first_chart(page, start)
        wait_idle(page)
        source = page.get_by_label("Model source")
        if not source.input_value().startswith(model_label[:20]):  # the default model needs no choosing
            source.click()
            page.get_by_role("option", name=model_label).click()
            wait_idle(page)
        for n in n_tokens:
            timed(page, link(page, "Attention map"))
            changes = []
            for r in range(repeat):  # a text the server has not seen: tokenise, forward, capture, figures, drawn
                changes.append(timed(page, submit(page, f"Take {r}: " + text_of(n - 4 - specials))))
            results["text_change"][n] = statistics.median(changes)
            type_text(page, text_of(n - specials))  # n tokens with the specials
            for _, title in PAGES:  # first visits fill the caches, as a user's first tour would
                timed(page, link(page, title))
            pages = {}
            for i, (_, title) in enumerate(PAGES):
                other = PAGES[(i + 1) % len(PAGES)][1]
                pages[title] = median_of(
                    page, link(page, title), repeat, between=lambda o=other: timed(page, link(page, o))
                )
            results["pages"][n] = pages
            sections = {}
            for title, names in SECTIONS.items():
                timed(page, link(page, title))
                for name in names:  # first visit of each section
                    timed(page, radio(page, name))
                for i, name in enumerate(names):
                    other = names[(i + 1) % len(names)]
                    sections[f"{title}: {name}"] = median_of(
                        page, radio(page, name), repeat, between=lambda o=other: timed(page, radio(page, o))
                    )
                timed(page, radio(page, names[0]))
            results["sections"][n] = sections
            timed(page, link(page, "Attention map"))
            pick_layer(page, 1)()
            pick_layer(page, 0)()
            changes = []
            for _ in range(repeat):
                changes.append(pick_layer(page, 1)())
                pick_layer(page, 0)()
            results["layer_change"][n] = statistics.median(changes)
    return results


def table(results: dict) -> str:
    sizes = list(results["pages"])
    head = "| page | " + " | ".join(f"{n} tokens (s)" for n in sizes) + " |"
    lines = [head, "| --- |" + " --- |" * len(sizes)]
    for _, title in PAGES:
        lines.append(f"| {title} | " + " | ".join(f"{results['pages'][n][title]:.2f}" for n in sizes) + " |")
    for name in results["sections"][sizes[0]]:
        lines.append(f"| {name} | " + " | ".join(f"{results['sections'][n][name]:.2f}" for n in sizes) + " |")
    changes = " | ".join(f"{results['layer_change'][n]:.2f}" for n in sizes)
    lines.append(f"| layer change on Attention map | {changes} |")
    texts = " | ".join(f"{results['text_change'][n]:.2f}" for n in sizes)
    lines.append(f"| new text, Attention map (tokenise → forward → capture → drawn) | {texts} |")
    lines.append(
        f"\nMedians of {results['repeat']} visits (caches warm). Cold server (started, then the first page "
        f"opened): first chart drawn after {results['cold_first_chart']:.2f} s."
    )
    return "\n".join(lines)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--tokens", type=int, nargs="+", default=[128, 512])
    p.add_argument("--model", default="all-MiniLM-L6-v2")
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--out", default="")
    args = p.parse_args()
    results = measure(args.tokens, args.model, args.repeat)
    print(table(results))
    if args.out:
        Path(args.out).write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
