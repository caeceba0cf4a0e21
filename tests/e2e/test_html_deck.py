"""The lecture deck as one offline HTML file, on a 390 × 844 phone with the network blocked: it asks for nothing
outside itself (its Content-Security-Policy allows nothing), fits the width, draws its figures, and turns slides by
the buttons, a swipe and the arrow keys."""

from __future__ import annotations

import pytest

from model.io.catalog import ModelSpec
from viz.export.deck import deck_html
from viz.views.source import DirectSource

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

SWIPE = """(dx) => {
  const at = (x) => new Touch({identifier: 1, target: document.body, clientX: x, clientY: 400});
  document.dispatchEvent(new TouchEvent('touchstart', {touches: [at(300)], changedTouches: [at(300)]}));
  document.dispatchEvent(new TouchEvent('touchend', {touches: [], changedTouches: [at(300 + dx)]}));
}"""


def test_the_html_deck_on_a_phone_offline(browser, tmp_path):
    from tests.viz.test_slides import TEXT, _deck

    items = _deck(DirectSource.for_text(ModelSpec("bundled"), TEXT))
    path = tmp_path / "lecture.html"
    path.write_text(deck_html(items, title="Attention from scratch"), encoding="utf-8")
    context = browser.new_context(viewport={"width": 390, "height": 844}, has_touch=True, is_mobile=True)
    page = context.new_page()
    outside: list[str] = []
    problems: list[str] = []

    def guard(route):
        if not route.request.url.startswith("file://"):
            outside.append(route.request.url)
            route.abort()
        else:
            route.continue_()

    page.route("**/*", guard)
    page.on("console", lambda msg: problems.append(msg.text) if msg.type == "error" else None)
    page.on("pageerror", lambda exc: problems.append(str(exc)))
    page.goto(path.as_uri())
    counter = page.locator("#counter")
    assert counter.inner_text() == "1 / 4"
    page.locator("#next").tap()
    assert counter.inner_text() == "2 / 4"
    page.locator(".slide.on .plot .main-svg").first.wait_for(timeout=30_000)  # the figure drew, offline
    assert page.evaluate("document.documentElement.scrollWidth") <= 390  # nothing wider than the phone
    page.evaluate(SWIPE, -120)  # swipe left: the next slide
    assert counter.inner_text() == "3 / 4"
    page.evaluate(SWIPE, 120)
    assert counter.inner_text() == "2 / 4"
    page.keyboard.press("ArrowRight")
    page.keyboard.press("ArrowRight")
    assert counter.inner_text() == "4 / 4"
    page.locator("#prev").tap()
    assert counter.inner_text() == "3 / 4"
    assert page.locator("meta[name=viewport]").count() == 1
    assert not outside, outside
    assert not problems, problems
    context.close()


@pytest.mark.parametrize("embed", [True, False])
def test_an_exported_figure_page_asks_nothing_of_the_network(browser, tmp_path, embed):
    """A figure page (one file, or a pack's page with plotly.js beside it) carrying a picture from elsewhere, as a
    hostile session file could put in a figure: the page still draws, and its Content-Security-Policy stops the
    request before it leaves (0 requests outside the files)."""
    import shutil

    import plotly.graph_objects as go

    from viz.export.offline import LIBRARY, LIBRARY_NAME, page_html

    fig = go.Figure(go.Heatmap(z=[[1, 2], [3, 4]]))
    fig.add_layout_image(source="https://example.com/track.png", x=0, y=1, sizex=1, sizey=1, xref="x", yref="y")
    (tmp_path / "page.html").write_text(page_html([("a map", fig)], title="t", embed=embed), encoding="utf-8")
    if not embed:
        shutil.copy(LIBRARY, tmp_path / LIBRARY_NAME)
    page = browser.new_page()
    sent: list[str] = []  # requests that left the page: any but those the policy stopped in the browser
    page.on("requestfinished", lambda r: sent.append(r.url))
    page.on("requestfailed", lambda r: None if "csp" in (r.failure or "").lower() else sent.append(r.url))  # stopped
    page.goto((tmp_path / "page.html").as_uri())
    page.locator(".main-svg").first.wait_for(timeout=30_000)  # plotly.js ran, inline or from beside the page
    page.wait_for_timeout(500)
    outside = [u for u in sent if not u.startswith(("file://", "data:"))]
    assert not outside, outside
    page.close()
