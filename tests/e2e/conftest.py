"""A real Streamlit server (the browser fixture is in tests/conftest.py; helpers in scripts/browser.py)."""

from __future__ import annotations

import pytest

from scripts.browser import streamlit_server, wait_idle


@pytest.fixture(scope="session")
def profiles(tmp_path_factory):
    """Where this session's server stores corpus profiles (empty at the start)."""
    return tmp_path_factory.mktemp("profiles")


@pytest.fixture(scope="session")
def runs(tmp_path_factory):
    """Where this session's server keeps finished training runs (empty at the start)."""
    return tmp_path_factory.mktemp("runs")


@pytest.fixture(scope="session")
def server(profiles, runs):
    with streamlit_server(env={"ATTENTION_LAB_PROFILES": str(profiles), "ATTENTION_LAB_RUNS": str(runs)}) as url:
        yield url


def open_tab(browser, url: str | None, width: int = 1400, height: int = 1100):
    """A fresh tab, opened on the app and idle (``url`` None: nothing opened yet), and the list its JavaScript
    errors are collected in."""
    page = browser.new_page(viewport={"width": width, "height": height})
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    if url is not None:
        page.goto(url)
        wait_idle(page)
    return page, errors


@pytest.fixture
def tab(server, browser):
    """A fresh tab with nothing open yet, for a test that starts on a link (``scripts.browser.start_at``) rather
    than on the default page; the test fails if a page threw a JavaScript error."""
    page, errors = open_tab(browser, None)
    yield page
    assert not errors, errors
    page.close()


@pytest.fixture
def page(server, browser):
    """A fresh tab on the app, opened and idle; the test fails if the page threw a JavaScript error."""
    page, errors = open_tab(browser, server)
    yield page
    assert not errors, errors
    page.close()
