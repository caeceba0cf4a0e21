"""A researcher opens their own model in a real browser: the path box is in sight at 1366 × 768, a path outside the
shared folders is answered with the one line that shares it, and a BertForMaskedLM folder (pytorch_model.bin and
vocab.txt, no tokenizer.json) shows its load report and fills the mask with its own head — the same guesses, in the
same order, as transformers' logits."""

from __future__ import annotations

import pytest
from safetensors.torch import load_file

from model.io.checkpoint import load_checkpoint
from scripts.browser import ROOT, nav_to, type_text, wait_idle
from tests.e2e.conftest import open_tab

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

FOLDER = ROOT / "tests" / "fixtures" / "hf_heads" / "bert_mlm"
TEXT = "The animal didn't cross the [MASK] because it was too tired."  # the fixture's "short" text
SHOTS = ROOT / "build" / "screenshots"


def open_source_list(page) -> None:
    for attempt in range(4):  # a click while the sidebar re-renders can leave the list closed
        page.get_by_role("combobox", name="Model source", exact=True).click()
        try:
            page.get_by_role("listbox").wait_for(timeout=4_000)
            return
        except Exception:
            if attempt == 3:
                raise
            page.keyboard.press("Escape")
            wait_idle(page)


def test_open_a_folder_with_its_mlm_head(server, browser):
    page, errors = open_tab(browser, server, 1366, 768)
    open_source_list(page)
    option = page.get_by_role("option", name="Local folder or file path")
    box, listbox = option.bounding_box(), page.get_by_role("listbox").bounding_box()
    assert box["y"] + box["height"] <= min(listbox["y"] + listbox["height"], 768), (box, listbox)  # no scrolling
    option.click()
    wait_idle(page)
    path = page.get_by_label("Path to a checkpoint file or folder")
    path.fill("/home/me/models/my-bert")
    path.press("Enter")
    wait_idle(page)
    command = page.locator('[data-testid="stCode"]').first
    assert command.inner_text().split() == ["ATTENTION_LAB_MODEL_DIRS=/home/me/models/my-bert", "streamlit", "run",
                                            "app.py"]  # fmt: skip
    path.fill(str(FOLDER))
    path.press("Enter")
    wait_idle(page)
    type_text(page, TEXT)
    page.get_by_text("About: bert_mlm").click()
    for line in ("Files read: config.json, pytorch_model.bin, vocab.txt", "Tensors: 42 of 42 used"):
        page.get_by_text(line).first.wait_for(timeout=30_000)
    nav_to(page, "Lessons")
    wait_idle(page)
    page.get_by_text("Masked tokens", exact=True).first.click()
    wait_idle(page)
    plot = page.locator(".js-plotly-plot").first
    plot.wait_for(timeout=30_000)
    shown = plot.evaluate("el => Array.from(el._fullData[0].y)")
    loaded = load_checkpoint(FOLDER)
    ids = load_file(str(FOLDER / "reference.safetensors"))["short.ids"].tolist()
    masked = ids.index(loaded.tokenizer.token_id("[MASK]"))
    logits = load_file(str(FOLDER / "reference.safetensors"))["short.logits"][masked]
    expected = [loaded.tokenizer.id_to_token(i) for i in logits.topk(len(shown)).indices.tolist()]
    assert shown in (expected, expected[::-1]), (shown, expected)  # the head's guesses, in its order
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / "own-model-mlm.png"), full_page=True)
    assert not errors, errors
    page.close()


def test_a_learned_sink_is_a_faded_target_in_the_head_view(server, browser):
    """gpt-oss's sink belongs to no token: the head view draws it as one more, faded target below the keys, with
    lines from every query (their weight is what the tokens' rows lack), and a hovered query keeps its sink line."""
    folder = ROOT / "tests" / "fixtures" / "hf" / "gpt_oss"
    page, errors = open_tab(browser, server, 1400, 1100)
    open_source_list(page)
    page.get_by_role("option", name="Local folder or file path").click()
    wait_idle(page)
    path = page.get_by_label("Path to a checkpoint file or folder")
    path.fill(str(folder))
    path.press("Enter")
    wait_idle(page)
    type_text(page, "the then the then there")
    nav_to(page, "Head view")
    wait_idle(page)
    view = page.locator(".al-hv")
    view.wait_for(timeout=30_000)
    page.wait_for_timeout(300)
    sink_lines = int(view.get_attribute("data-sink-lines"))
    assert sink_lines > 0, "no line reaches the sink"
    canvas = page.locator("canvas.al-hv-canvas")
    box = canvas.bounding_box()
    page.mouse.move(box["x"] + 20, box["y"] + 4 + 20 * 2 + 10)  # the query in row 2
    page.wait_for_timeout(150)
    assert view.get_attribute("data-active") == "query:2"
    assert 0 < int(view.get_attribute("data-sink-lines")) <= sink_lines
    SHOTS.mkdir(parents=True, exist_ok=True)
    canvas.screenshot(path=str(SHOTS / "head-view-sink.png"))
    assert not errors, errors
    page.close()
