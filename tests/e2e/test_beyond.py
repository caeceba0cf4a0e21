"""Beyond the weights and corpus profiles in a real browser: a sink-grid click opens that head, the
renormalise-without-the-sink switch redraws it and says what it does; a corpus run shows progress, can be
cancelled without leaving a profile, and a finished run's scatter picks a head for its top documents."""

from __future__ import annotations

import json

import pytest

from scripts.browser import start_at, wait_idle
from tests.e2e.test_decoder import no_errors
from tests.e2e.test_interaction import click_at, marker_point

pytestmark = [pytest.mark.e2e, pytest.mark.slow]


def titles(page) -> list[str]:
    return [t.text_content() for t in page.locator("svg .gtitle").all()]


def test_a_sink_cell_opens_its_head_and_the_sink_can_be_taken_away(server, tab):
    page = start_at(tab, server, "mixing", "Beyond the weights")
    no_errors(page, "context mixing")
    page.wait_for_function("document.querySelectorAll('.js-plotly-plot .main-svg').length >= 2")
    page.get_by_role("radio", name="Sinks and head types", exact=True).first.click()
    wait_idle(page)
    no_errors(page, "sinks")
    grid = page.locator(".js-plotly-plot").first
    grid.scroll_into_view_if_needed()
    page.wait_for_timeout(300)
    # the click targets are the last trace; pick layer 1, head 2 (heads listed layer by layer)
    pick = "const tr = gd._fullData[gd._fullData.length - 1]; const H = gd._fullLayout.xaxis._categories.length;"
    target = json.loads(grid.evaluate(f"(gd) => {{ {pick} return JSON.stringify(tr.customdata[H + 2]); }}"))
    assert target[:2] == [1, 2]
    click_at(page, marker_point(page, grid, pick + " const i = H + 2;"))
    page.get_by_role("heading", name="Attention map").first.wait_for()
    assert titles(page)[0].startswith("Layer 1, head 2 — attention weights"), titles(page)
    page.get_by_text("Renormalise without the sink").click()
    wait_idle(page)
    no_errors(page, "without the sink")
    assert titles(page)[0].startswith("Layer 1, head 2 — weights without [CLS], [SEP], rows rescaled"), titles(page)
    assert page.get_by_text("A view, not what the model computes").count() == 1


def test_a_corpus_run_can_be_cancelled_then_run_and_explored(server, tab, profiles):
    page = start_at(tab, server, "corpus", "Corpus profiles")
    box = page.get_by_label("Documents (at most)")
    box.fill("1000")
    box.press("Enter")
    wait_idle(page)
    page.get_by_role("button", name="Run the corpus").click()
    page.get_by_text("of 1000 documents").first.wait_for(timeout=30_000)  # the progress bar
    page.get_by_role("button", name="Cancel").click()
    page.get_by_text("The run was cancelled; nothing was saved.").wait_for(timeout=60_000)
    assert [p for p in profiles.iterdir()] == []  # no profile, not even a temporary folder
    box.fill("30")
    box.press("Enter")
    wait_idle(page)
    page.get_by_role("button", name="Run the corpus").click()
    page.get_by_text("30 documents of the bundled held-out documents").first.wait_for(timeout=60_000)
    page.wait_for_function("document.querySelectorAll('.js-plotly-plot .main-svg').length >= 3", timeout=60_000)
    no_errors(page, "corpus results")
    assert len([p for p in profiles.iterdir() if not p.name.startswith(".")]) == 1
    scatter = page.locator(".js-plotly-plot").first
    scatter.scroll_into_view_if_needed()
    page.wait_for_timeout(300)
    # the head with the largest mean weight on the previous token (the default x axis)
    pick = "const tr = gd._fullData[0]; const i = tr.x.indexOf(Math.max(...tr.x));"
    layer, head = json.loads(scatter.evaluate(f"(gd) => {{ {pick} return JSON.stringify(tr.customdata[i]); }}"))
    click_at(page, marker_point(page, scatter, pick))
    no_errors(page, "scatter click")
    page.wait_for_function(
        f"[...document.querySelectorAll('svg .gtitle')].some(t => t.textContent.startsWith('L{layer}H{head}:'))",
        timeout=30_000,
    )
