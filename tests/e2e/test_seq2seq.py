"""An encoder–decoder trained on “Watch it learn” opened on the other pages, in a real browser: the decoder's
cross-attention on the attention map (the source along the bottom), a head chosen by clicking its thumbnail, and the
sidebar's Stack switching to the encoder, the text following."""

from __future__ import annotations

import pytest

from model.learn.loop import TrainSpec, train
from model.learn.store import write
from scripts.browser import wait_idle
from tests.e2e.test_interaction import click_at, marker_point

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

SPEC = TrainSpec(task="dates", n_layers=2, n_heads=2, d_model=32, positional="sinusoidal", steps=300)


def titles(page) -> list[str]:
    return [t.text_content() for t in page.locator(".js-plotly-plot svg .gtitle").all()]


def test_a_decoder_shows_its_cross_attention_and_the_stack_switches(runs, tab, server):
    page = tab
    write(train(SPEC), runs)
    page.goto(f"{server}/?model_kind=trained&trained_run={SPEC.key}&trained_source=07mar1994&text=1994-03-07")
    wait_idle(page)
    cross = "Layer 0, head 0 — cross-attention, target on source"
    assert cross in titles(page), titles(page)
    chart = page.locator(".js-plotly-plot").nth(3)
    ticks = chart.locator(".xtick text").evaluate_all("(els) => els.map((e) => e.textContent)")
    assert {"m", "a", "r"} <= set(ticks), ticks  # the source's tokens are the keys
    caption = page.get_by_text("Strongest per row").first.text_content()
    assert "Strongest per row: “[BOS]”→“" in caption and "over the source's 10 tokens" in caption

    every = page.locator(".js-plotly-plot").nth(4)  # every head's cross-attention
    every.scroll_into_view_if_needed()
    point = marker_point(page, every, "const tr = gd._fullData[1]; const i = 3;")  # layer 1, head 1
    click_at(page, point)
    assert "Layer 1, head 1 — cross-attention, target on source" in titles(page), titles(page)

    page.get_by_text("Encoder", exact=True).first.click()
    wait_idle(page)
    assert page.get_by_label("Text to analyse").input_value() == "07mar1994"
    assert not any("cross-attention" in t for t in titles(page)), titles(page)
    assert "its encoder" in page.locator(".js-plotly-plot").first.text_content()
