"""A real Streamlit server (the browser fixture is in tests/conftest.py; helpers in scripts/browser.py)."""

from __future__ import annotations

from urllib.parse import urlsplit

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


#: per browser: one context for the fixtures' tabs, and in it a tab kept open on each server's origin
_SHARED: dict[int, tuple] = {}


def fresh_tab(browser, server: str, width: int = 1400, height: int = 1100):
    """A new tab for ``server`` (the app's URL) in the shared context, with no cookie and nothing in the origin's
    storage, as a new visitor's; nothing opened yet.

    Chromium (``--process-per-site``, scripts/browser.py) puts a context's tabs of one origin in one renderer
    process, and a tab kept open on the origin (a blank document: no Streamlit session) keeps that process and
    its compiled scripts alive between tests: on the 64 GFLOP/s host a tab then costs chromium 4.1–4.7 core-seconds
    to open the app instead of 8.7–12.6 in a context and a process of its own (docs/development.md)."""
    where = urlsplit(server)
    origin = f"{where.scheme}://{where.netloc}"
    context, kept = _SHARED.setdefault(id(browser), (browser.new_context(), {}))
    if origin not in kept:
        kept[origin] = context.new_page()  # a blank document of the origin, answered here: nothing holds the server
        kept[origin].route(f"{origin}/_tab_kept", lambda route: route.fulfill(body="", content_type="text/html"))
        kept[origin].goto(f"{origin}/_tab_kept")
    context.clear_cookies()
    kept[origin].evaluate("localStorage.clear(); sessionStorage.clear()")
    page = context.new_page()
    page.set_viewport_size({"width": width, "height": height})
    return page


def open_tab(browser, url: str | None, width: int = 1400, height: int = 1100, server: str | None = None):
    """A fresh tab, opened on the app at ``url`` and idle (None: nothing opened yet; ``server`` the app's URL),
    and the list its JavaScript errors are collected in."""
    page = fresh_tab(browser, server or url, width, height)
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
    page, errors = open_tab(browser, None, server=server)
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
