"""A lecturer builds a deck in the browser: "Add to deck" under figures of two pages (a predict-first lesson
among them), retitles one on the Deck page, exports PowerPoint and HTML; the .pptx is opened with python-pptx."""

from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import urlencode

import pytest

from scripts.browser import nav_to, wait_idle
from tests.e2e.conftest import fresh_tab

pytestmark = [pytest.mark.e2e, pytest.mark.slow]
pptx = pytest.importorskip("pptx")


def _add(page, nth: int = 0) -> None:
    page.get_by_role("button", name="Add to deck").nth(nth).click()
    wait_idle(page)


def test_build_a_deck_export_pptx_and_html(server, browser, tmp_path):
    page = fresh_tab(browser, server, 1400, 1100)
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.goto(f"{server}/?{urlencode({'layer': 1, 'head': 2, 'focus_query': 5, 'focus_key': 2})}")
    wait_idle(page)
    _add(page)  # the attention map of L1H2 with its focus
    nav_to(page, "Lessons")  # in the app: a new URL would be a new session
    wait_idle(page)
    page.get_by_role("radio", name="Predict first").check()
    wait_idle(page)
    page.get_by_role("button", name="Reveal").click()
    wait_idle(page)
    _add(page)  # the predict-first answer: a question slide comes before it
    page.get_by_role("link", name="Lecture deck: 2 figures").first.click()
    wait_idle(page)
    page.get_by_text("2 figures · 4 slides").wait_for(timeout=30_000)
    box = page.get_by_label("Slide title").first  # the attention map's
    box.fill("What the focus token looks at")
    box.press("Enter")
    wait_idle(page)
    page.get_by_role("button", name="↑").nth(1).click()  # the lesson first
    wait_idle(page)
    page.get_by_role("button", name="Build PowerPoint (.pptx)").click()
    wait_idle(page)
    with page.expect_download() as pending:
        page.get_by_role("button", name="Download attention-lab-deck").click()
    path = tmp_path / "deck.pptx"
    pending.value.save_as(path)
    with page.expect_download() as pending:
        page.get_by_role("button", name="Slides as one HTML file").click()
    html_path = tmp_path / "deck.html"
    pending.value.save_as(html_path)
    assert not errors, errors
    page.close()

    prs = pptx.Presentation(str(path))
    deck = list(prs.slides)
    assert len(deck) == 4  # title, question, answer, attention map
    assert "Attention from scratch" in deck[0].shapes.title.text and "Attention Lab" in deck[0].placeholders[1].text
    assert "Predict first" in " ".join(s.text_frame.text for s in deck[1].shapes if s.has_text_frame)
    for slide in deck[2:]:
        pictures = [s for s in slide.shapes if s.shape_type == 13]
        assert len(pictures) == 1
        for shape in slide.shapes:
            assert shape.left >= 0 and shape.left + shape.width <= prs.slide_width
            assert shape.top >= 0 and shape.top + shape.height <= prs.slide_height
        notes = slide.notes_slide.notes_text_frame.text
        text = " ".join(s.text_frame.text for s in slide.shapes if s.has_text_frame)
        assert "What it shows" in notes and "Ask:" in notes and "Source:" in notes
        assert text and text in notes  # the caption on the slide is the one in the notes ("The numbers: …")
    assert "attends most to" in " ".join(s.text_frame.text for s in deck[2].shapes if s.has_text_frame)
    image = next(s for s in deck[3].shapes if s.shape_type == 13).image
    assert image.size == (1920, 1080)
    (tmp_path / "slide.png").write_bytes(image.blob)
    if os.environ.get("ATTENTION_LAB_KEEP"):  # to look at it
        (Path(os.environ["ATTENTION_LAB_KEEP"]) / "slide.png").write_bytes(image.blob)
        (Path(os.environ["ATTENTION_LAB_KEEP"]) / "deck.pptx").write_bytes(path.read_bytes())

    viewer = browser.new_page(viewport={"width": 1600, "height": 900})
    viewer.goto(html_path.as_uri())
    viewer.keyboard.press("ArrowRight")
    viewer.keyboard.press("ArrowRight")
    viewer.wait_for_timeout(500)
    assert viewer.locator("#counter").inner_text() == "3 / 4"
    assert viewer.locator(".slide.on .plot .main-svg").count() > 0  # the figure drew, offline
    viewer.keyboard.press("ArrowRight")
    viewer.wait_for_timeout(500)
    assert "What the focus token looks at" in viewer.locator(".slide.on .gtitle").text_content()
    viewer.close()
