"""The classroom server (`streamlit run serve.py`): the same app, its code and default model loaded before the first
browser arrives, with the project's server settings (loopback by default, XSRF protection on uploads)."""

from __future__ import annotations

import urllib.error
import urllib.request

import pytest

from scripts.browser import nav_to, streamlit_server, wait_idle

pytestmark = [pytest.mark.e2e, pytest.mark.slow]


def test_the_class_server_serves_the_app_warm(browser):
    with streamlit_server(script="serve.py") as url:
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        errors: list[str] = []
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        page.goto(url)
        wait_idle(page)
        titles = [t.text_content() for t in page.locator(".js-plotly-plot svg .gtitle").all()]
        assert "Layer 0, head 0 — attention weights" in titles, titles
        nav_to(page, "Tokens")
        wait_idle(page)
        page.get_by_role("heading", name="Tokens").first.wait_for(timeout=30_000)
        assert not errors, errors
        request = urllib.request.Request(f"{url}/_stcore/upload_file/session/file", data=b"x", method="PUT")
        with pytest.raises(urllib.error.HTTPError) as refused:  # no XSRF token: refused, as app.py's server does
            urllib.request.urlopen(request, timeout=10)
        assert refused.value.code == 403
        page.close()


def test_warming_never_stops_the_server(monkeypatch):
    import serve
    from viz.shell import services

    def broken(*_args, **_kwargs):
        raise OSError("the bundled checkpoint is missing")

    monkeypatch.setattr(services, "get_model", broken)
    serve.warm()  # the first page says what went wrong instead
