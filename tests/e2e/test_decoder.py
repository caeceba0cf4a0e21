"""SmolLM2 in a real browser: pick it, visit every page and the decoder lessons, and click the heads open."""

from __future__ import annotations

import json

import pytest

from scripts.browser import PAGES, open_page, type_text, wait_idle
from tests.e2e.test_interaction import click_at, marker_point

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

TEXT = "The cat sat on the mat because it was tired. Then the dog came in and barked."
SMOLLM = "SmolLM2-135M-Instruct (decoder LLM: GQA, RoPE, causal)"


def no_errors(page, where: str) -> None:
    assert page.locator('[data-testid="stException"]').count() == 0, f"exception on {where}"
    assert page.locator('[data-testid="stAlertContentError"]').count() == 0, f"error box on {where}"


def section(page, name: str) -> None:
    page.get_by_role("radio", name=name, exact=True).first.click()
    wait_idle(page)


def test_smollm2_every_page_and_the_decoder_lessons(server, page):
    page.get_by_label("Model source").click()
    page.get_by_role("option", name=SMOLLM).click()
    wait_idle(page)
    type_text(page, TEXT)
    assert page.get_by_text("30 layers × 9 heads").count() or page.get_by_text("SmolLM2").count()
    for path, title in PAGES:
        open_page(page, server, path, title)
        no_errors(page, title)
        if path == "tokens":
            # " cat" is one token with its leading space: its chip covers 4 characters
            assert "cat\n#1 · id 2644 · chars 3–7" in page.locator(".al-chips").inner_text()
        elif path == "head-view":
            page.wait_for_selector("canvas.al-hv-canvas", timeout=30_000)
        elif path not in ("lessons", "corpus", "learn"):  # corpus: once a corpus is run; learn: once a model trains
            page.wait_for_selector(".js-plotly-plot .main-svg", timeout=30_000)
        if path == "next-token":  # predictions; the generation map once Generate is pressed
            assert page.locator(".js-plotly-plot").count() == 1
            page.get_by_role("button", name="Generate").click()
            wait_idle(page)
            page.wait_for_function("document.querySelectorAll('.js-plotly-plot .main-svg').length >= 2")
            assert page.get_by_text("computed with the KV cache").count() >= 1
            no_errors(page, "generation")
    open_page(page, server, "lessons", "Lessons")
    for name in ("Attention sinks", "Shared K/V (GQA)", "Induction heads"):
        section(page, name)
        no_errors(page, name)
        page.wait_for_selector(".js-plotly-plot .main-svg", timeout=30_000)
        assert page.locator(".js-plotly-plot").count() == 2, name
    # the strongest induction head is one click away: its thumbnail opens it on the attention map
    thumbs = page.locator(".js-plotly-plot").nth(1)
    thumbs.scroll_into_view_if_needed()
    page.wait_for_timeout(300)
    best = json.loads(thumbs.evaluate("(gd) => JSON.stringify(gd._fullData[1].customdata[0])"))
    click_at(page, marker_point(page, thumbs, "const tr = gd._fullData[1]; const i = 0;"))
    page.get_by_role("heading", name="Attention map").first.wait_for()
    titles = [t.text_content() for t in page.locator("svg .gtitle").all()]
    assert titles[0].startswith(f"Layer {best[0]}, head {best[1]}"), titles
    assert best[0] in (17, 18), best  # SmolLM2's induction heads sit in layers 17-18
