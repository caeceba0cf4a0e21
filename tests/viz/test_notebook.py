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


def test_the_head_view_page_keeps_a_token_from_closing_its_script():
    page = head_view("bundled", "a </script><b>x</b>", layer=0, heads=[0, 1]).html()
    assert page.count("</script>") == 1 and "fetch(" not in page and "http" not in page.split("<script")[0]


@pytest.mark.slow
@pytest.mark.e2e
def test_the_inline_head_view_draws_and_isolates_a_hovered_token(browser, tmp_path):
    path = tmp_path / "hv.html"
    path.write_text(head_view("bundled", TEXT, layer=2).html(), encoding="utf-8")
    page = browser.new_page(viewport={"width": 1200, "height": 800})
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.goto(path.as_uri())
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
