"""A real Streamlit server and Debian's chromium, for the browser tests, the benchmark and the screenshots.

with streamlit_server() as url, chromium() as browser:
    page = browser.new_page(); page.goto(url); wait_idle(page)
"""

from __future__ import annotations

import contextlib
import os
import re
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
    # one renderer process per site in a context: a new tab joins a warm one (tests/e2e/conftest.py: _fresh_tab)
    "--process-per-site",
]
#: (url path, page title) of every page, in the order of the navigation
PAGES = [
    ("", "Attention map"),
    ("start", "Start here"),
    ("tokens", "Tokens"),
    ("head-view", "Head view"),
    ("overview", "Model overview"),
    ("compare", "Compare"),
    ("metrics", "Head metrics"),
    ("find", "Find heads"),
    ("next-token", "Next token"),
    ("block", "The block"),
    ("qkv", "Q / K / V"),
    ("animate", "Step through a head"),
    ("rollout", "Rollout and flow"),
    ("mixing", "Beyond the weights"),
    ("causes", "Causes"),
    ("corpus", "Corpus profiles"),
    ("masks", "Masks"),
    ("positional", "Positional encodings"),
    ("lessons", "Lessons"),
    ("learn", "Watch it learn"),
]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def streamlit_server(timeout: float = 60, env: dict | None = None, script: str = "app.py") -> Iterator[str]:
    """Run ``streamlit run app.py`` (``script``: serve.py, the classroom server) on a free loopback port; yields its
    URL once it answers.

    The server's output goes to build/streamlit-<port>.log (read it when a browser test fails)."""
    port = free_port()
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "ATTENTION_LAB_WARM_RENDERER": "1", **(env or {})}  # as users run it
    cmd = [sys.executable, "-m", "streamlit", "run", script, "--server.port", str(port),
           "--server.address", "127.0.0.1", "--server.headless", "true"]  # fmt: skip
    log_path = ROOT / "build" / f"streamlit-{port}.log"
    log_path.parent.mkdir(exist_ok=True)
    log = log_path.open("w")
    proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, text=True)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.time() + timeout
        while time.time() < deadline:
            try:
                with urllib.request.urlopen(url + "/_stcore/health", timeout=2) as r:
                    if r.status == 200:
                        break
            except OSError:
                time.sleep(0.3)
        else:
            proc.kill()
            raise RuntimeError("streamlit did not start: " + log_path.read_text())
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()


@contextlib.contextmanager
def chromium():
    """Debian's chromium through Playwright (``playwright install`` is not needed)."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        try:
            yield browser
        finally:
            browser.close()


#: Streamlit's own run state on the app's root (the attribute its own browser tests read): idle when the last run
#: has finished and nothing is running, asked to run or still drawing (a skeleton, the "Running" widget)
IDLE_JS = """() => {
  const app = document.querySelector('[data-testid="stApp"]');
  return !!app && ['notRunning', 'compilationError'].includes(app.dataset.testScriptState)
    && !document.querySelector('[data-testid="stStatusWidget"]')
    && !document.querySelector('[data-testid="stSkeleton"]');
}"""


def wait_idle(page, timeout: float = 90_000) -> None:
    """Wait until Streamlit has finished running the script (``IDLE_JS``), and is still idle a moment later (a
    run that calls ``st.rerun`` ends and the next starts). The short first wait lets a click's rerun be asked."""
    deadline = time.time() + timeout / 1000
    page.wait_for_timeout(150)
    while time.time() < deadline:
        page.wait_for_function(IDLE_JS, timeout=max(1.0, (deadline - time.time()) * 1000), polling=50)
        page.wait_for_timeout(200)
        if page.evaluate(IDLE_JS):
            return
    raise TimeoutError("the app kept running")


def choose(page, label: str, option: str, tries: int = 3) -> None:
    """Choose ``option`` in the selectbox labelled ``label``, then wait for the run. A click that lands while
    the app re-renders the sidebar can leave the list closed: it is opened again, up to ``tries`` times."""
    for attempt in range(tries):
        page.get_by_label(label).click()
        try:
            page.get_by_role("option", name=option).click(timeout=5_000)
            break
        except Exception:  # playwright's TimeoutError: the list did not open
            if attempt == tries - 1:
                raise
            page.keyboard.press("Escape")
            wait_idle(page)
    wait_idle(page)


def run_if_asked(page) -> None:
    """Press the button a page shows before work it expects to take long ("Patch (about 3 s)", "Measure it (about
    3–10 s)"), if it shows one.
    The estimate comes from this machine's measured speed, so a slow or busy machine asks where a fast one does not."""
    button = page.get_by_role("button", name=re.compile(r"\(about [\d.]+(–[\d.]+)? s\)$"))
    if button.count():
        button.first.click()
        wait_idle(page)


def type_text(page, text: str) -> None:
    """Replace the sidebar's text and submit it (Ctrl+Enter), then wait for the run to finish."""
    area = page.get_by_label("Text to analyse")
    area.fill(text)
    area.press("Control+Enter")
    wait_idle(page)


def nav_to(page, title: str) -> None:
    """Click the page ``title`` in the navigation: in the top bar through its section's menu, or in the sidebar where a
    narrow window folds the navigation into it (same session; page.goto would start a new one)."""
    side = page.locator('[data-testid="stSidebarNavLink"]', has_text=title)
    if side.count() and side.first.is_visible():
        side.first.click()
        return
    for section in page.locator('[data-testid="stTopNavSection"]').all():
        section.click()
        menu = page.locator('[data-testid="stTopNavPopoverBody"]')
        menu.first.wait_for(state="visible", timeout=10_000)
        link = menu.locator('[data-testid="stTopNavDropdownLink"]', has_text=title)
        if link.count():
            link.first.click()
            return
        page.keyboard.press("Escape")  # not in this section: close its menu
        menu.first.wait_for(state="hidden", timeout=10_000)
    raise LookupError(f"no page {title!r} in the navigation")


def open_page(page, url: str, path: str, title: str) -> None:
    """Open a page through the navigation (same session; page.goto would start a new one)."""
    nav_to(page, title)
    page.wait_for_url(re.compile(re.escape(f"{url}/{path}") + r"(\?.*)?$"))  # settings ride in the query
    wait_idle(page)
    page.get_by_role("heading", name=title).first.wait_for(timeout=30_000)


def start_at(page, url: str, path: str, title: str, query: str = ""):
    """Open the page at ``path`` as a link to it does (a new session that starts there, ``query``: its settings),
    wait for its run and its heading; returns ``page``."""
    page.goto(f"{url}/{path}" + (f"?{query}" if query else ""))
    wait_idle(page)
    page.get_by_role("heading", name=title).first.wait_for(timeout=30_000)
    return page
