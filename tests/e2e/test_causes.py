"""The Causes page in a real browser: a template fills both prompts, patching draws its grids, and a click on a
head's cell opens that head on the attention map."""

from __future__ import annotations

import pytest

from scripts.browser import run_if_asked, start_at, wait_idle
from tests.e2e.test_interaction import click_at, marker_point

pytestmark = [pytest.mark.e2e, pytest.mark.slow]


def open_layer_1_head_2(page) -> None:
    """Click the first chart's cell of layer 1, head 2 (its click targets list the cells layer by layer) and check
    that the attention map opens on that head."""
    chart = page.locator(".js-plotly-plot").first
    chart.scroll_into_view_if_needed()
    page.wait_for_timeout(300)
    point = marker_point(
        page, chart, "const tr = gd._fullData[1]; const H = gd._fullLayout.xaxis._categories.length; const i = H + 2;"
    )
    click_at(page, point)
    page.get_by_role("heading", name="Attention map").first.wait_for(timeout=120_000)
    wait_idle(page)
    titles = [t.text_content() for t in page.locator("svg .gtitle").all()]
    assert titles[0].startswith("Layer 1, head 2"), titles


def test_patching_a_template_and_opening_a_clicked_head(server, tab):
    page = start_at(tab, server, "causes", "Causes")
    page.get_by_role("radio", name="Patching", exact=True).first.click()
    wait_idle(page)
    page.get_by_role("button", name="Use it").click()
    wait_idle(page)
    run_if_asked(page)  # a busy machine measures slower passes and asks before the sweep
    page.screenshot(path="/tmp/causes_patching.png", full_page=True)
    page.wait_for_selector(".js-plotly-plot .main-svg", timeout=120_000)
    assert page.get_by_text("they differ at position").first.is_visible()
    titles = [t.text_content() for t in page.locator("svg .gtitle").all()]
    assert titles[0].startswith("Patching each head's output"), titles
    open_layer_1_head_2(page)
    page.get_by_role("button", name="L1H2's QK and OV circuits").click()
    page.get_by_role("heading", name="Causes").first.wait_for(timeout=120_000)
    wait_idle(page)
    page.wait_for_selector(".js-plotly-plot .main-svg", timeout=120_000)
    titles = [t.text_content() for t in page.locator("svg .gtitle").all()]
    assert titles[0].startswith("Layer 1, head 2: its QK and OV circuits"), titles
    page.screenshot(path="/tmp/causes_circuit.png", full_page=True)


def test_attribution_patching_beside_real_patching_and_a_path_patched_head_opens(server, tab):
    """Issue 49: the estimate's grids, its scatter against real patching (with r in the caption), and path
    patching's grid, whose cells open their head like activation patching's."""
    page = start_at(tab, server, "causes", "Causes")
    page.get_by_role("radio", name="Patching", exact=True).first.click()
    wait_idle(page)
    page.get_by_role("button", name="Use it").click()
    wait_idle(page)
    run_if_asked(page)
    page.wait_for_selector(".js-plotly-plot .main-svg", timeout=120_000)
    page.get_by_role("radiogroup", name="Method").get_by_text("attribution patching (estimate)").click()
    wait_idle(page)
    page.wait_for_selector(".js-plotly-plot .main-svg", timeout=120_000)
    titles = [t.text_content() for t in page.locator("svg .gtitle").all()]
    assert titles[:2] == [
        "Attribution patching: each head's output (at every position)",
        "The estimate against real patching, cell by cell",
    ], titles
    assert page.get_by_text("Pearson's r =").first.is_visible()
    page.locator(".js-plotly-plot").nth(1).scroll_into_view_if_needed()
    page.screenshot(path="/tmp/causes_attribution_patching.png", full_page=True)
    page.get_by_role("radiogroup", name="Method").get_by_text("path patching", exact=True).click()
    wait_idle(page)
    if page.get_by_role("button", name="Patch the paths").count():
        page.get_by_role("button", name="Patch the paths").click()
        wait_idle(page)
    page.wait_for_selector(".js-plotly-plot .main-svg", timeout=120_000)
    titles = [t.text_content() for t in page.locator("svg .gtitle").all()]
    assert titles == ["Path patching: each head straight to the logits"], titles
    assert page.get_by_text("straight to the logits").first.is_visible()
    page.screenshot(path="/tmp/causes_paths.png", full_page=True)
    open_layer_1_head_2(page)


def test_a_click_on_a_direct_logit_attribution_cell_opens_its_head_and_the_feed_forward_column_stays(server, browser):
    """Direct logit attribution's grid on a decoder opened from a folder (the Llama fixture): a head's cell opens that
    head on the attention map; a cell of the feed-forward column belongs to no head and opens nothing."""
    from scripts.browser import ROOT, nav_to
    from tests.e2e.conftest import open_tab
    from tests.e2e.test_own_model import open_source_list

    page, errors = open_tab(browser, server)
    open_source_list(page)
    page.get_by_role("option", name="Local folder or file path").click()
    wait_idle(page)
    path = page.get_by_label("Path to a checkpoint file or folder")
    path.fill(str(ROOT / "tests" / "fixtures" / "hf" / "llama"))
    path.press("Enter")
    wait_idle(page)
    nav_to(page, "Causes")
    wait_idle(page)
    page.get_by_role("radio", name="Attribution", exact=True).first.click()
    wait_idle(page)
    chart = page.locator(".js-plotly-plot").first
    chart.scroll_into_view_if_needed()
    page.wait_for_timeout(300)
    assert chart.locator(".gtitle").first.text_content().startswith("Direct logit attribution")
    columns = "const tr = gd._fullData[1]; const C = gd._fullLayout.xaxis._categories.length;"
    assert chart.evaluate(f"gd => {{ {columns} return gd._fullLayout.xaxis._categories[C - 1]; }}") == "FF"
    click_at(page, marker_point(page, chart, columns + " const i = C + C - 1;"))  # layer 1's feed-forward
    assert page.get_by_role("heading", name="Causes").first.is_visible()
    chart = page.locator(".js-plotly-plot").first
    click_at(page, marker_point(page, chart, columns + " const i = C + 2;"))  # layer 1, head 2
    page.get_by_role("heading", name="Attention map").first.wait_for(timeout=120_000)
    wait_idle(page)
    titles = [t.text_content() for t in page.locator("svg .gtitle").all()]
    assert titles[0].startswith("Layer 1, head 2"), titles
    assert not errors, errors
    page.close()
