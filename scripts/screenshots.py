"""Regenerate the README's screenshots on purpose: ``python scripts/screenshots.py``.

Starts the app, types the README's sentence and saves one screenshot per page in assets/screenshots/.
(The browser tests write theirs under build/screenshots/ and never touch the committed ones.)
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from scripts.browser import PAGES, ROOT, chromium, open_page, streamlit_server, type_text, wait_idle

SENTENCE = "The quick brown fox jumps over the lazy dog."
OUT = ROOT / "assets" / "screenshots"


def main() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    with streamlit_server() as url, chromium() as browser:
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        page.goto(url)
        wait_idle(page)
        type_text(page, SENTENCE)
        for path, title in PAGES:
            open_page(page, url, path, title)
            shot = OUT / f"{path or 'attention'}.png"
            page.screenshot(path=str(shot))
            print(f"wrote {shot}")


if __name__ == "__main__":
    main()
