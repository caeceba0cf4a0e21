"""The lecture in one click (issue 46): from a fresh server (no stored run, empty caches) in chromium, the seconds from
"Build the lecture" to the deck listed, then to the .pptx downloaded and to the HTML downloaded; and the same from
the command line. Prints a Markdown table (bench/RESULTS.md, "The lecture").

    python bench/lecture.py
"""

from __future__ import annotations

import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from scripts.browser import ROOT, chromium, nav_to, streamlit_server, wait_idle

TEXT = "The animal didn't cross the street because it was too tired."


def browser(runs: str) -> dict:
    with streamlit_server(env={"ATTENTION_LAB_RUNS": runs}) as url, chromium() as b:
        page = b.new_page(viewport={"width": 1366, "height": 900}, accept_downloads=True)
        page.goto(url)
        wait_idle(page)
        nav_to(page, "Lecture deck")
        wait_idle(page)
        t0 = time.perf_counter()
        page.get_by_role("button", name="Build the lecture").click()
        listed = page.get_by_text(re.compile(r"^\d+ figures · \d+ slides")).first
        listed.wait_for(timeout=300_000)
        built = time.perf_counter() - t0
        print("the deck:", listed.text_content(), flush=True)
        t0 = time.perf_counter()
        page.get_by_role("button", name="Build PowerPoint (.pptx)").click()
        page.get_by_role("button", name="Download").first.wait_for(timeout=300_000)
        with page.expect_download(timeout=120_000) as pending:
            page.get_by_role("button", name="Download").first.click()
        size = Path(pending.value.path()).stat().st_size
        pptx = time.perf_counter() - t0
        t0 = time.perf_counter()
        with page.expect_download(timeout=120_000) as pending:
            page.get_by_role("button", name="Slides as one HTML file").click()
        html = time.perf_counter() - t0
        pending.value.path()
        return {"built": built, "pptx": pptx, "html": html, "size": size}


def cli(runs: str, fmt: str) -> float:
    out = Path(runs) / f"lecture.{fmt}"
    t0 = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "viz.export", "--lecture", "--text", TEXT, "--format", fmt, "--out", str(out)],
        cwd=ROOT, check=True, capture_output=True, env={"ATTENTION_LAB_RUNS": runs, "PATH": "/usr/bin:/bin"},
    )  # fmt: skip
    return time.perf_counter() - t0


def main() -> None:
    with tempfile.TemporaryDirectory() as fresh:
        shown = browser(fresh)  # trains the induction run: nothing is stored yet
    with tempfile.TemporaryDirectory() as fresh:
        first = cli(fresh, "pptx")  # trains again, from the command line
        second = cli(fresh, "html")  # the run is stored now
    print("| where | built | .pptx | HTML | total |")
    print("| --- | --- | --- | --- | --- |")
    total = shown["built"] + shown["pptx"]
    print(
        f"| browser, fresh server (trains the induction run) | {shown['built']:.1f} s | {shown['pptx']:.1f} s "
        f"({shown['size'] / 2**20:.1f} MB) | {shown['html']:.1f} s | {total:.1f} s to the .pptx |"
    )
    print(f"| command line, no run stored: `--lecture --out lecture.pptx` | — | — | — | {first:.1f} s |")
    print(f"| command line, run stored: `--lecture --format html` | — | — | — | {second:.1f} s |")


if __name__ == "__main__":
    main()
