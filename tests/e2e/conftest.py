"""A real Streamlit server (the browser fixture is in tests/conftest.py; helpers in scripts/browser.py)."""

from __future__ import annotations

import pytest

from scripts.browser import streamlit_server


@pytest.fixture(scope="session")
def profiles(tmp_path_factory):
    """Where this session's server stores corpus profiles (empty at the start)."""
    return tmp_path_factory.mktemp("profiles")


@pytest.fixture(scope="session")
def server(profiles):
    with streamlit_server(env={"ATTENTION_LAB_PROFILES": str(profiles)}) as url:
        yield url
