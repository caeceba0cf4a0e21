"""A T5 folder and a DeBERTa folder in a real browser: the decoder's cross-attention on the attention map, the head
view (the target's tokens on one side, the source's on the other) and the model overview; the encoder stack; and
DeBERTa's scores split into their terms on the positional page, with its computed caption. Screenshots go to
build/screenshots/encdec/."""

from __future__ import annotations

from pathlib import Path

import pytest

from scripts.browser import open_page, type_text, wait_idle

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

SHOTS = Path(__file__).resolve().parents[2] / "build" / "screenshots" / "encdec"
SOURCE = "The animal didn't cross the street because it was too tired."
TARGET = "The animal was tired."


def titles(page) -> list[str]:
    return [t.text_content() for t in page.locator(".js-plotly-plot svg .gtitle").all()]


def no_errors(page, where: str) -> None:
    assert page.locator('[data-testid="stException"]').count() == 0, f"exception on {where}"
    assert page.locator('[data-testid="stAlertContentError"]').count() == 0, f"error box on {where}"


def open_folder(page, path: str) -> None:
    page.get_by_label("Model source").click()
    page.get_by_role("option", name="Local folder or file path").click()
    wait_idle(page)
    box = page.get_by_label("Path to a checkpoint file or folder")
    box.fill(path)
    box.press("Enter")
    wait_idle(page)


def test_a_t5_decoder_shows_its_cross_attention_on_three_pages(page, server):
    SHOTS.mkdir(parents=True, exist_ok=True)
    open_folder(page, "tests/fixtures/hf_encdec/t5")
    source = page.get_by_label("Source the encoder reads")
    source.fill(SOURCE)
    source.press("Enter")
    wait_idle(page)
    type_text(page, TARGET)
    no_errors(page, "attention map")
    assert "Layer 0, head 0 — cross-attention, target on source" in titles(page), titles(page)
    chart = next(c for c in page.locator(".js-plotly-plot").all() if "cross-attention, target on" in c.text_content())
    ticks = chart.locator(".xtick text").evaluate_all("(els) => els.map((e) => e.textContent)")
    assert any("animal" in t for t in ticks) and any(t == " di" for t in ticks), ticks  # the source's tokens
    assert page.get_by_text("Strongest per row").count() >= 1
    page.screenshot(path=str(SHOTS / "t5-attention-map.png"), full_page=True)

    open_page(page, server, "head-view", "Head view")
    page.get_by_text("cross-attention", exact=True).first.click()
    wait_idle(page)
    page.wait_for_selector("canvas.al-hv-canvas", timeout=30_000)
    view = page.locator(".al-hv")
    assert int(view.get_attribute("data-strong")) > 0
    source_tokens = page.get_by_text("tokens of the source").first.text_content()
    assert f"the {view.get_attribute('data-keys')} tokens of the source" in source_tokens
    no_errors(page, "head view")
    page.screenshot(path=str(SHOTS / "t5-head-view-cross.png"), full_page=True)

    open_page(page, server, "overview", "Model overview")
    page.wait_for_selector(".js-plotly-plot .main-svg", timeout=30_000)
    assert any("cross-attention" in t.lower() for t in titles(page)), titles(page)
    no_errors(page, "overview")
    page.screenshot(path=str(SHOTS / "t5-overview.png"), full_page=True)

    page.get_by_text("Encoder", exact=True).first.click()  # the other stack: the text is the source now
    wait_idle(page)
    assert page.get_by_label("Text to analyse").input_value() == SOURCE
    assert not any("cross-attention" in t.lower() for t in titles(page)), titles(page)
    no_errors(page, "encoder overview")


def test_debertas_scores_split_into_their_terms(page, server):
    open_folder(page, "tests/fixtures/hf/deberta-v2")
    type_text(page, SOURCE)
    open_page(page, server, "positional", "Positional encodings")
    page.get_by_text("This model's encoding", exact=True).first.click()
    wait_idle(page)
    page.wait_for_selector(".js-plotly-plot .main-svg", timeout=30_000)
    assert any("the scores split into their terms" in t for t in titles(page)), titles(page)
    assert page.get_by_text("of the score to").count() >= 1  # the computed caption
    assert page.get_by_text("adds no position to its embeddings").count() == 1
    no_errors(page, "positional")
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / "deberta-score-split.png"), full_page=True)
