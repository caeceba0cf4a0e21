"""The real app in a real browser: type a sentence, visit every page, charts render, no errors."""

from __future__ import annotations

from pathlib import Path

import pytest
from axe_playwright_python.sync_playwright import Axe

from scripts.browser import PAGES, ROOT, open_page, run_if_asked, type_text, wait_idle
from scripts.screenshots import SENTENCE
from tests.e2e.conftest import fresh_tab

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

SHOTS = ROOT / "build" / "screenshots"  # the README's screenshots are made on purpose by scripts/screenshots.py


def server_log_tail(lines: int = 40) -> str:
    logs = sorted((ROOT / "build").glob("streamlit-*.log"), key=lambda p: p.stat().st_mtime)
    return "\n".join(logs[-1].read_text(errors="replace").splitlines()[-lines:]) if logs else "(no server log)"


def download(page, label: str, messages: list[str]):
    """Click the first download button called ``label`` and return the download. One retry; a failure
    reports the browser's messages and the server's log, so that a flaky run can be understood."""
    for attempt in range(2):
        button = page.get_by_role("button", name=label).first
        button.wait_for(state="visible", timeout=30_000)
        try:
            with page.expect_download(timeout=90_000) as info:
                button.click(timeout=60_000)
            return info.value
        except Exception as exc:
            if attempt:
                raise AssertionError(
                    f"{label} download failed: {exc}\nbrowser: {messages[-20:]}\nserver log:\n{server_log_tail()}"
                ) from exc
            wait_idle(page)
    raise AssertionError("unreachable")


#: axe-core checks everything but Streamlit's page navigation, whose list markup is Streamlit's own
AXE = Axe()
OUR_MARKUP = {"exclude": [['[data-testid="stSidebarNav"]']]}


def test_every_page_renders_in_chromium(server, browser):
    """Every page draws, with no error, and axe-core finds no serious or critical violation (contrast, labels, roles)
    in the app's own markup."""
    page = fresh_tab(browser, server, 1400, 1000)
    problems: list[str] = []
    page.on("pageerror", lambda exc: problems.append(f"page error: {exc}"))
    page.on("console", lambda msg: problems.append(f"console {msg.type}: {msg.text}") if msg.type == "error" else None)
    page.on("requestfailed", lambda req: problems.append(f"request failed: {req.url}"))
    messages: list[str] = []  # everything the page logs, for the report of a failed download
    page.on("console", lambda msg: messages.append(f"{msg.type}: {msg.text}"))
    page.goto(server + "/")
    wait_idle(page)
    type_text(page, SENTENCE)
    # the deferred per-figure downloads work in a real browser (rendered server-side on click)
    svg_download = download(page, "SVG", messages)
    svg = Path(svg_download.path()).read_bytes()
    assert svg.lstrip().startswith(b"<svg") and b"Layer 0, head 0" in svg
    assert svg_download.suggested_filename.endswith(".svg") and "attention" in svg_download.suggested_filename
    assert b"Plotly" in Path(download(page, "HTML", messages).path()).read_bytes()
    wait_idle(page)
    SHOTS.mkdir(parents=True, exist_ok=True)
    for path, title in PAGES:
        open_page(page, server, path, title)
        assert page.get_by_role("heading", name=title).first.is_visible(), title
        assert page.locator('[data-testid="stException"]').count() == 0, f"exception on {title}"
        assert page.locator('[data-testid="stAlertContentError"]').count() == 0, f"error box on {title}"
        if path == "tokens":
            assert page.locator(".al-chip").count() >= 10
            assert "quick" in page.locator(".al-chips").inner_text()
        elif path == "next-token":  # an encoder: the page says which model predicts the next token
            assert page.get_by_text("has no next-token head").first.is_visible()
        elif path == "causes":  # an encoder reads its answer at a [MASK]: the page says so (tests/e2e/test_causes.py)
            assert page.get_by_text("Put [MASK] where the answer goes").first.is_visible()
        elif path == "corpus":  # nothing to draw until a corpus is run (tests/e2e/test_beyond.py runs one)
            assert page.get_by_role("button", name="Run the corpus").is_visible()
        elif path == "learn":  # nothing to draw until a run is trained (tests/e2e/test_learn.py trains one)
            assert page.get_by_role("button", name="Train").is_visible()
        elif path == "head-view":  # drawn by a component on a canvas
            page.wait_for_selector("canvas.al-hv-canvas", timeout=30_000)
            assert int(page.locator(".al-hv").get_attribute("data-strong")) > 0
        else:
            if path == "lessons":  # "Predict first" hides its answer until the reader commits to a guess
                assert page.locator(".js-plotly-plot").count() == 0
                page.get_by_role("button", name="Reveal").click()
                wait_idle(page)
            run_if_asked(page)  # work a page expects to take long waits for its button
            page.wait_for_selector(".js-plotly-plot .main-svg", timeout=30_000)
            assert page.locator(".js-plotly-plot").count() >= 1
        page.screenshot(path=str(SHOTS / f"{path or 'attention'}.png"), full_page=False)
        assert (SHOTS / f"{path or 'attention'}.png").stat().st_size > 10_000, title
        serious = [
            f"{v['id']} ({v['impact']}): {v['nodes'][0]['failureSummary'][:160]}"
            for v in AXE.run(page, context=OUR_MARKUP).response["violations"]
            if v["impact"] in ("serious", "critical")
        ]
        assert not serious, (title, serious)
    # the text survived navigation (session state is per session, kept across pages)
    assert page.get_by_label("Text to analyse").input_value() == SENTENCE
    relevant = [p for p in problems if "favicon" not in p and "websocket" not in p.lower()]
    assert not relevant, relevant
    page.close()


def test_two_browser_sessions_at_once_see_only_their_own_text(server, browser):
    """Two real sessions type different texts at the same time; each sees only its own tokens."""
    texts = {"a": "Moses went up the mountain.", "b": "The function returns a dictionary."}
    own = {"a": "moses", "b": "dictionary"}
    contexts = {k: browser.new_context(viewport={"width": 1300, "height": 900}) for k in texts}
    pages = {k: c.new_page() for k, c in contexts.items()}
    for page in pages.values():
        page.goto(server + "/tokens")
    for page in pages.values():
        wait_idle(page)
    for k, page in pages.items():  # submit both before waiting for either
        area = page.get_by_label("Text to analyse")
        area.fill(texts[k])
        area.press("Control+Enter")
    for k, page in pages.items():
        wait_idle(page)
        page.wait_for_selector(".al-chips", timeout=30_000)
        chips = page.locator(".al-chips").inner_text().lower()
        other = own["b" if k == "a" else "a"]
        assert own[k] in chips and other not in chips, (k, chips)
    for c in contexts.values():
        c.close()
