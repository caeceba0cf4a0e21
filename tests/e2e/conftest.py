"""A real Streamlit server and Debian's chromium driven by Playwright (helpers in scripts/browser.py)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from scripts.browser import CHROMIUM, chromium, streamlit_server


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
    with chromium() as b:
        yield b
