"""One call from a notebook: show() returns the dashboard's own figure and caption; head_view() is the dashboard's
interactive head view, drawn by the same script in any browser (checked in chromium, offline)."""

from __future__ import annotations

import pytest

from viz.notebook import figure_caption, head_view, show, views

TEXT = "The cat sat on the mat because it was tired."


def test_show_returns_the_views_figure_with_its_caption_and_parts_by_name():
    fig = show("bundled", TEXT, "attention map", layer=1, head=2)
    (view,) = views("bundled", TEXT, "attention", layer=1, head=2)
    assert fig.layout.title.text == view.figure.layout.title.text and figure_caption(fig) == view.caption
    assert fig.layout.title.text.startswith("Layer 1, head 2")
    lens = show("bundled", "The cat sat on the [MASK].", "logit lens")
    assert set(lens) == {"grid", "rank"}
    with pytest.raises(ValueError, match="unknown view 'nope'"):
        show("bundled", TEXT, "nope")
    with pytest.raises(ValueError, match="unknown model"):
        show("no-such-model", TEXT)


def opened(browser, folder, page_html: str):
    """A standalone page saved in ``folder`` and opened in chromium: (the tab, the JavaScript errors it throws)."""
    path = folder / "hv.html"
    path.write_text(page_html, encoding="utf-8")
    page = browser.new_page(viewport={"width": 1200, "height": 800})
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.goto(path.as_uri())
    return page, errors


def test_the_head_view_page_keeps_a_token_from_closing_its_script():
    page = head_view("bundled", "a </script><b>x</b>", layer=0, heads=[0, 1]).html()
    assert page.count("</script>") == 1 and "fetch(" not in page and "http" not in page.split("<script")[0]


@pytest.mark.slow
@pytest.mark.e2e
def test_the_inline_head_view_draws_and_isolates_a_hovered_token(browser, tmp_path):
    page, errors = opened(browser, tmp_path, head_view("bundled", TEXT, layer=2).html())
    view = page.locator(".al-hv")
    page.wait_for_selector("canvas.al-hv-canvas")
    page.wait_for_function("document.querySelector('.al-hv').dataset.strong > 0")
    everything = int(view.get_attribute("data-strong"))
    box = page.locator("canvas.al-hv-canvas").bounding_box()
    page.mouse.move(box["x"] + 20, box["y"] + 4 + 20 * 3 + 10)  # the left label of token 3 ("sat")
    page.wait_for_timeout(150)
    assert 0 < int(view.get_attribute("data-strong")) < everything  # only that token's lines stand out
    page.get_by_role("button", name="head 0").click()  # heads toggle
    assert errors == []
    page.close()


def test_show_displays_its_caption_and_multi_part_views_display_every_part():
    fig = show("bundled", TEXT, "attention", layer=1, head=2)
    assert fig.caption == figure_caption(fig) and fig.caption.startswith("L1H2")
    fig.update_layout(width=700)  # still a plotly Figure: everything plotly offers works on it
    html = fig._repr_mimebundle_()["text/html"]
    assert "js-plotly-plot" in html or "plotly-graph-div" in html
    assert fig.caption.replace("“", "").split(" ")[1] in html  # the caption, under the figure
    lens = show("bundled", "The cat sat on the [MASK].", "logit lens")
    page = lens._repr_mimebundle_()["text/html"]
    assert page.count("plotly-graph-div") == 2 and all(lens[p].caption[:20] in page for p in ("grid", "rank"))


@pytest.mark.slow
@pytest.mark.e2e
def test_a_notebook_exported_with_nbconvert_shows_its_figures_and_captions_offline(browser, tmp_path):
    """The outputs a kernel stores for show() — attention map, then the logit lens's two parts — exported by
    ``nbconvert --to html``: plotly.js is in the file once, every figure draws in chromium with the network off, and
    each caption is there."""
    nbformat = pytest.importorskip("nbformat")
    nbconvert = pytest.importorskip("nbconvert")
    import viz.notebook as notebook

    notebook._plotly_js_sent = False  # a fresh kernel
    fig = show("bundled", TEXT, "attention", layer=1, head=2)
    lens = show("bundled", "The cat sat on the [MASK].", "logit lens")
    cells = []
    for shown in (fig, lens):
        cell = nbformat.v4.new_code_cell("show(...)")
        cell.outputs = [nbformat.v4.new_output("display_data", data=shown._repr_mimebundle_())]
        cells.append(cell)
    body, _ = nbconvert.HTMLExporter().from_notebook_node(nbformat.v4.new_notebook(cells=cells))
    assert body.count("plotly.js v") == 1  # the library's banner: inlined once for the whole notebook
    path = tmp_path / "notebook.html"
    path.write_text(body, encoding="utf-8")
    context = browser.new_context()
    context.route("http*://**", lambda route: route.abort())  # offline: nothing may come from the web
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.goto(path.as_uri())
    page.locator(".js-plotly-plot .main-svg").nth(2).wait_for(timeout=30_000)
    assert page.locator(".js-plotly-plot").count() == 3 and not errors, errors
    text = page.inner_text("body")
    assert fig.caption[:40] in text and lens["grid"].caption[:40] in text
    context.close()


@pytest.mark.slow
@pytest.mark.e2e
def test_the_head_view_draws_every_line_the_threshold_promises_at_512_tokens(browser, tmp_path):
    """No cap per query: at 512 tokens × 12 heads the view counts every weight ≥ the threshold (the old payload
    sent 16 keys per query and dropped 15 % of them without a word); the slider stops at the lightest line sent."""
    import json

    import numpy as np

    from viz.figures.headview import LINE_FLOOR, head_view_data
    from viz.figures.theme import Theme
    from viz.notebook import HeadView

    rng = np.random.default_rng(0)
    scores = rng.normal(size=(12, 512, 512)) * 2.5
    patterns = (np.exp(scores) / np.exp(scores).sum(-1, keepdims=True)).astype(np.float32)  # (12, 512, 512)
    data = head_view_data(patterns, [f"t{i}" for i in range(512)], list(range(12)), 0.05, Theme())
    assert len(json.dumps(data)) < 2e6
    page, errors = opened(browser, tmp_path, HeadView(data).html())
    view = page.locator(".al-hv")
    page.wait_for_function("document.querySelector('.al-hv')?.dataset.lines > 0")
    assert int(view.get_attribute("data-lines")) == int((patterns >= 0.05).sum())
    assert int((patterns[0] >= 0.01).sum(-1).max()) > 16  # rows with more than the old cap of 16 keys
    slider = page.locator(".al-hv input[type=range]")
    assert float(slider.get_attribute("min")) == LINE_FLOOR
    slider.focus()
    page.keyboard.press("Home")  # the lowest setting: every line sent
    page.wait_for_function(f"document.querySelector('.al-hv').dataset.lines == {int((patterns >= 0.01).sum())}")
    assert page.locator(".al-hv-count").inner_text() == f"0.01 · {int((patterns >= 0.01).sum()):,} lines"
    page.get_by_role("button", name="head 3").click()  # a head off: its lines leave the count
    want = int((np.delete(patterns, 3, axis=0) >= 0.01).sum())
    page.wait_for_function(f"document.querySelector('.al-hv').dataset.lines == {want}")
    assert errors == []
    page.close()
