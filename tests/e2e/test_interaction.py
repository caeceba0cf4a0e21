"""Interactions only a real browser can prove: clicks on charts reach the server, the head view reacts to the
mouse without a round trip, the focus token follows the user across pages, and the URL restores the view."""

from __future__ import annotations

import json
from pathlib import Path
from urllib.parse import urlencode

import pytest

from scripts.browser import open_page, start_at, type_text, wait_idle
from tests.e2e.conftest import fresh_tab
from viz.export.band import png_text

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

SENTENCE = "The animal didn't cross the street because it was too tired."
SENTENCE_TOKENS: list[str] = []  # as the loaded model cuts them (filled by the app_page fixture)


def marker_point(page, chart, index_js: str) -> dict:
    """Page coordinates of a click-target marker of a plotly chart (``index_js``: JS picking the trace and
    point: it defines ``tr`` and ``i``)."""
    return json.loads(
        chart.evaluate(
            f"""(gd) => {{ const L = gd._fullLayout, r = gd.getBoundingClientRect(); {index_js}
            return JSON.stringify({{x: r.left + L.xaxis._offset + L.xaxis.d2p(tr.x[i]),
                                    y: r.top + L.yaxis._offset + L.yaxis.d2p(tr.y[i])}}); }}"""
        )
    )


def strip_tokens(page) -> list[str]:
    """The tokens of the text, as the token strip shows them."""
    page.locator(".al-tok").first.wait_for()
    return page.locator(".al-tok").all_inner_texts()


def click_at(page, point: dict) -> None:
    page.mouse.move(point["x"], point["y"])
    page.wait_for_timeout(150)
    page.mouse.click(point["x"], point["y"])
    wait_idle(page)


@pytest.fixture
def app_page(server, tab):
    """A tab on the default page with SENTENCE as its text (a link's ``text`` setting)."""
    start_at(tab, server, "", "Attention map", urlencode({"text": SENTENCE}))
    SENTENCE_TOKENS[:] = strip_tokens(tab)
    return tab


def test_a_click_on_an_overview_thumbnail_opens_that_head(server, app_page):
    page = app_page
    open_page(page, server, "overview", "Model overview")
    chart = page.locator(".js-plotly-plot").first
    # the thumbnail of layer 1, head 2: the click-target trace lists heads layer by layer
    point = marker_point(
        page, chart, "const tr = gd._fullData[1]; const H = gd._fullLayout.xaxis.tickvals.length; const i = H + 2;"
    )
    click_at(page, point)
    page.get_by_role("heading", name="Attention map").first.wait_for()
    assert (
        page.url.rstrip("/").endswith(server.rsplit(":", 1)[1].split("/")[0])
        or "attention" in page.url
        or "?" in page.url
    )
    titles = [t.text_content() for t in page.locator("svg .gtitle").all()]
    assert titles[0].startswith("Layer 1, head 2"), titles


def test_hovering_a_head_view_token_isolates_its_lines(server, app_page):
    page = app_page
    open_page(page, server, "head-view", "Head view")
    view = page.locator(".al-hv")
    view.wait_for()
    canvas = page.locator("canvas.al-hv-canvas")
    box = canvas.bounding_box()
    page.mouse.move(box["x"] + box["width"] / 2, box["y"] + 2)  # over the lines, not a token: nothing isolated
    page.wait_for_timeout(100)
    all_lines = int(view.get_attribute("data-strong")) + int(view.get_attribute("data-faint"))
    row = 20  # px per row in the default theme
    it = SENTENCE_TOKENS.index("it")
    page.mouse.move(box["x"] + 20, box["y"] + 4 + row * it + row / 2)  # the query token "it"
    page.wait_for_timeout(100)
    assert view.get_attribute("data-active") == f"query:{it}"
    strong, faint = int(view.get_attribute("data-strong")), int(view.get_attribute("data-faint"))
    assert 0 < strong < all_lines and faint > 0 and strong + faint == all_lines  # the others fade
    # redrawn in the browser, no server round trip; how fast is bench/headview.py's to measure (the CI run of c5bbacc
    # took 62 ms beside three busy test workers and failed a 50 ms bound): only a broken redraw crosses this one
    assert float(view.get_attribute("data-draw-ms")) < 500
    canvas.click(position={"x": 20, "y": 4 + row * it + row / 2})
    wait_idle(page)
    with page.expect_download() as pending:  # the static download draws what the screen shows: "it" in focus
        page.get_by_role("button", name="PNG").first.click()
    png = Path(pending.value.path()).read_bytes()
    meta = png_text(png)
    assert "“it” in focus" in meta["Title"] and meta["Description"].startswith("head 0: “it” looks most at")
    assert json.loads(meta["Comment"])["selection"]["focus"] == it
    open_page(page, server, "qkv", "Q / K / V")
    assert page.locator(".al-tok.query").all_inner_texts() == ["it"]  # clicked in the head view, focused everywhere


def test_a_heatmap_click_focuses_the_query_on_every_page(server, app_page):
    page = app_page
    chart = page.locator(".js-plotly-plot").first
    tokens = strip_tokens(page)
    # the cell (query "it", key at position 2): the click targets list the cells row by row
    cell = tokens.index("it") * len(tokens) + 2
    index = f"const tr = gd._fullData.find(t => t.name === 'cells'); const i = {cell};"
    click_at(page, marker_point(page, chart, index))
    assert page.locator(".al-tok.query").all_inner_texts() == ["it"]
    assert page.locator(".al-tok.key").all_inner_texts() == [tokens[2]]
    open_page(page, server, "qkv", "Q / K / V")
    assert page.locator(".al-tok.query").all_inner_texts() == ["it"]
    page.get_by_role("radio", name="One query", exact=True).first.click()
    wait_idle(page)
    assert "“it”" in page.locator("svg .gtitle").first.text_content()  # "How query “it” weighs every key"


def test_a_reload_keeps_model_text_page_head_and_focus(server, browser):
    page = fresh_tab(browser, server, 1400, 1100)
    missing: list[str] = []
    page.on("response", lambda r: missing.append(r.url) if r.status == 404 and "_stcore" not in r.url else None)
    page.goto(server)
    wait_idle(page)
    page.get_by_label("Model source").click()
    page.get_by_role("option", name="all-MiniLM-L6-v2").click()
    wait_idle(page)
    type_text(page, SENTENCE)
    for label, value in (("Layer", "3"), ("Head", "1")):
        page.get_by_label(label, exact=True).first.click()
        page.get_by_role("option", name=value, exact=True).click()
        wait_idle(page)
    page.locator(".al-tok", has_text="it").first.dispatch_event("click")
    wait_idle(page)
    open_page(page, server, "qkv", "Q / K / V")
    link = page.url
    assert "/qkv?" in link and "model_kind=minilm" in link and "layer=3" in link and "head=1" in link
    page.reload()
    wait_idle(page)
    assert page.get_by_role("heading", name="Q / K / V").first.is_visible()
    assert page.get_by_label("Text to analyse").input_value() == SENTENCE
    assert page.locator(".al-tok.query").all_inner_texts() == ["it"]
    assert "all-MiniLM-L6-v2" in page.locator('[data-testid="stSidebar"]').inner_text()
    titles = " ".join(t.text_content() for t in page.locator("svg .gtitle").all())
    assert "layer 3, head 1" in titles, titles  # "Queries, keys and values of layer 3, head 1 ..."
    assert not missing, missing
    page.close()


def test_find_heads_starts_from_the_focus_and_a_thumbnail_opens_its_head(server, app_page):
    page = app_page
    tokens = SENTENCE_TOKENS
    page.locator(".al-tok").nth(tokens.index("it")).click()  # query in focus
    wait_idle(page)
    page.locator(".al-tok").nth(2).click(modifiers=["Shift"])  # key in focus
    wait_idle(page)
    open_page(page, server, "find", "Find heads")
    title = page.locator("svg .gtitle").first.text_content()
    assert f"“it” → “{tokens[2]}”" in title, title  # the picks start from the tokens in focus
    chart = page.locator(".js-plotly-plot").first
    best = json.loads(chart.evaluate("(gd) => JSON.stringify(gd._fullData[1].customdata[0])"))
    click_at(page, marker_point(page, chart, "const tr = gd._fullData[1]; const i = 0;"))
    page.get_by_role("heading", name="Attention map").first.wait_for()
    titles = [t.text_content() for t in page.locator("svg .gtitle").all()]
    assert titles[0].startswith(f"Layer {best[0]}, head {best[1]}"), titles
    assert page.locator(".al-tok.query").all_inner_texts() == ["it"]


def test_head_view_tokens_take_the_keyboard(server, app_page):
    """One Tab stop: Tab and the arrow keys move through the tokens (isolating their lines, said to screen readers),
    Enter puts the token in focus as a click does."""
    page = app_page
    open_page(page, server, "head-view", "Head view")
    view = page.locator(".al-hv")
    view.wait_for()
    page.locator(".al-hv input[type=range]").focus()
    page.keyboard.press("Tab")  # from the threshold slider onto the tokens
    assert view.get_attribute("data-active") == "query:0"
    page.keyboard.press("Tab")
    page.keyboard.press("ArrowRight")
    it = SENTENCE_TOKENS.index("it")
    for _ in range(it - 1):
        page.keyboard.press("ArrowDown")
    assert view.get_attribute("data-active") == f"key:{it}"
    assert page.locator(".al-hv-said").inner_text().startswith("key it (position")
    page.wait_for_timeout(100)  # the lines are redrawn on the next frame
    assert int(view.get_attribute("data-strong")) > 0 and int(view.get_attribute("data-faint")) > 0  # others fade
    page.keyboard.press("Enter")
    wait_idle(page)
    assert f"focus_key={it}" in page.url


def test_with_special_tokens_hidden_a_chip_focuses_its_own_token(server, tab):
    """The strip leaves [CLS] out: a click on the second “the” puts text position 5 in focus (it put 4, “on”, one
    token early, and the strip lit the token after the one in focus), the same token on every page."""
    text = "The cat sat on the mat."
    start_at(tab, server, "", "Attention map", urlencode({"text": text, "hide_special": "true"}))
    chips = strip_tokens(tab)
    assert chips[0] == "the" and chips.count("the") == 2  # [CLS] hidden
    tab.locator(".al-tok").nth(4).dispatch_event("click")  # the second “the”: text position 5
    wait_idle(tab)
    assert [i for i, c in enumerate(tab.locator(".al-tok").all()) if "query" in c.get_attribute("class")] == [4]
    caption = " ".join(tab.locator('[data-testid="stCaptionContainer"]').all_inner_texts())
    assert "“the”·5 looks most at" in caption and "focus_query=5" in tab.url
    assert "the·5" in tab.locator("svg g.ytick text").all_text_contents()  # the map's rows number as the text does
    open_page(tab, server, "qkv", "Q / K / V")  # every token shown there, [CLS] first
    assert [i for i, c in enumerate(tab.locator(".al-tok").all()) if "query" in c.get_attribute("class")] == [5]
