"""A real Streamlit server (the browser fixture is in tests/conftest.py; helpers in scripts/browser.py)."""

from __future__ import annotations

import pytest

from scripts.browser import streamlit_server


@pytest.fixture(scope="session")
def server():
    with streamlit_server() as url:
        yield url
