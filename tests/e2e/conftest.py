"""A real Streamlit server and Debian's chromium driven by Playwright."""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
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


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def streamlit_server(timeout: float = 60):
    """Run ``streamlit run app.py`` on a free loopback port; yields its URL once it answers."""
    port = free_port()
    env = dict(os.environ, PYTHONUNBUFFERED="1", ATTENTION_LAB_WARM_RENDERER="1")  # as users run it
    cmd = [sys.executable, "-m", "streamlit", "run", "app.py", "--server.port", str(port),
           "--server.address", "127.0.0.1", "--server.headless", "true"]  # fmt: skip
    log_path = ROOT / "build" / f"streamlit-{port}.log"  # the server's output, for debugging a failed test
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


@pytest.fixture(scope="session")
def server():
    with streamlit_server() as url:
        yield url


@pytest.fixture(scope="session")
def browser():
    if not Path(CHROMIUM).exists():
        if os.environ.get("CI"):
            pytest.fail("chromium is missing in CI: .ci/run must install it")
        pytest.skip("Debian chromium is not installed (apt-get install chromium)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        yield b
        b.close()


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
