"""Watch it learn in a real browser: train, watch it go, scrub, choose a head by clicking its thumbnail, export the
scrub as a GIF, and open the same run from its link in another tab."""

from __future__ import annotations

import pytest

from scripts.browser import wait_idle
from tests.e2e.test_interaction import click_at, marker_point

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

QUERY = "learn_layers=2&learn_heads=2&learn_d_model=32&learn_steps=300"


def titles(page) -> list[str]:
    return [t.text_content() for t in page.locator(".js-plotly-plot svg .gtitle").all()]


def frame_title(page) -> str:
    return next(t for t in titles(page) if " at step " in t and t.startswith("L"))


def test_train_scrub_pick_a_head_export_and_share(server, tab, browser, tmp_path):
    page = tab
    page.goto(f"{server}/learn?{QUERY}")
    wait_idle(page)
    page.get_by_role("button", name="Train").click()
    page.get_by_text("Training: step").first.wait_for(timeout=30_000)  # the live progress
    page.get_by_role("button", name="Open this model on every page").wait_for(timeout=180_000)
    wait_idle(page)
    assert "after 300 of 300 steps" in page.get_by_text("of 300 steps").first.text_content()
    assert frame_title(page).endswith("at step 300")

    slider = page.get_by_role("slider").last  # the step slider (the learning rate's comes first)
    slider.focus()
    slider.press("ArrowLeft")
    wait_idle(page)
    assert frame_title(page).endswith("at step 280"), titles(page)

    grid = page.locator(".js-plotly-plot").nth(1)  # every head at this step
    grid.scroll_into_view_if_needed()
    point = marker_point(page, grid, "const tr = gd._fullData[1]; const i = 1;")  # layer 0, head 1
    click_at(page, point)
    assert frame_title(page) == "L0H1 at step 280", titles(page)
    assert any(t.startswith("L0H1 before, at and after") for t in titles(page))  # the whole page follows the choice

    with page.expect_download(timeout=180_000) as pending:
        page.get_by_role("button", name="Scrub as GIF").click()
    path = tmp_path / pending.value.suggested_filename
    pending.value.save_as(path)
    from PIL import Image

    assert path.read_bytes()[:4] == b"GIF8" and Image.open(path).n_frames == 9  # steps 0, 40, …, 280, 300

    other = browser.new_page(viewport={"width": 1400, "height": 1100})  # a student opens the lecturer's link
    try:
        other.goto(f"{server}/learn?{QUERY}")
        wait_idle(other)
        assert other.get_by_role("button", name="Train").count() == 0
        other.get_by_role("button", name="Open this model on every page").click()
        wait_idle(other)
        other.get_by_role("heading", name="Attention map").first.wait_for(timeout=30_000)
        assert "Trained here: induction" in other.locator(".js-plotly-plot").first.text_content()
    finally:
        other.close()
