"""A real Streamlit server and Debian's chromium, for the browser tests, the benchmark and the screenshots.

with streamlit_server() as url, chromium() as browser:
    page = browser.new_page(); page.goto(url); wait_idle(page)
"""

from __future__ import annotations

import contextlib
import os
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
]
#: (url path, page title) of every page, in the order of the navigation
PAGES = [
    ("", "Attention map"),
    ("tokens", "Tokens"),
    ("head-view", "Head view"),
    ("overview", "Model overview"),
    ("compare", "Compare"),
    ("metrics", "Head metrics"),
    ("qkv", "Q / K / V"),
    ("rollout", "Rollout and flow"),
    ("masks", "Masks"),
    ("positional", "Positional encodings"),
    ("lessons", "Lessons"),
]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def streamlit_server(timeout: float = 60, env: dict | None = None) -> Iterator[str]:
    """Run ``streamlit run app.py`` on a free loopback port; yields its URL once it answers.

    The server's output goes to build/streamlit-<port>.log (read it when a browser test fails)."""
    port = free_port()
    env = dict(os.environ, PYTHONUNBUFFERED="1", ATTENTION_LAB_WARM_RENDERER="1", **(env or {}))  # as users run it
    cmd = [sys.executable, "-m", "streamlit", "run", "app.py", "--server.port", str(port),
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


def wait_idle(page, timeout: float = 90_000) -> None:
    """Wait until Streamlit has finished running the script: its status widget gone and staying gone."""
    page.wait_for_selector('[data-testid="stApp"]', timeout=timeout)
    status = '[data-testid="stStatusWidget"]'
    deadline = time.time() + timeout / 1000
    page.wait_for_timeout(300)
    while time.time() < deadline:
        page.wait_for_selector(status, state="detached", timeout=timeout)
        page.wait_for_timeout(800)
        if page.locator(status).count() == 0 and page.locator('[data-testid="stSkeleton"]').count() == 0:
            return
    raise TimeoutError("the app kept running")


def type_text(page, text: str) -> None:
    """Replace the sidebar's text and submit it (Ctrl+Enter), then wait for the run to finish."""
    area = page.get_by_label("Text to analyse")
    area.fill(text)
    area.press("Control+Enter")
    wait_idle(page)


def open_page(page, url: str, path: str, title: str) -> None:
    """Open a page through the sidebar navigation (same session; page.goto would start a new one)."""
    page.locator('[data-testid="stSidebarNavLink"]', has_text=title).first.click()
    page.wait_for_url(f"{url}/{path}")
    wait_idle(page)
    page.get_by_role("heading", name=title).first.wait_for(timeout=30_000)
