"""A reader of the post uploads torch.save(model.state_dict()) in a real browser, answers the heads question and
sees the attention map: the heatmap's numbers in the page equal the post's own softmax weights."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from model.io.catalog import BUNDLED_TOKENIZER
from model.io.tokenizer import Tokenizer
from scripts.browser import ROOT, type_text, wait_idle
from tests.reference import post_encoder as ref

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

TEXT = "The animal didn't cross the street because it was too tired."
SHOTS = ROOT / "build" / "screenshots"


def pick(page, label: str, option: str) -> None:
    page.get_by_role("combobox", name=label, exact=True).click()
    page.get_by_role("option", name=option, exact=True).click()
    wait_idle(page)


def test_upload_the_posts_state_dict_answer_heads_see_the_map(page, tmp_path):
    model = ref.make(seed=6)
    path = tmp_path / "encoder.pt"
    torch.save(model.state_dict(), path)
    type_text(page, TEXT)
    pick(page, "Model source", "Upload a checkpoint file")
    page.locator('input[type="file"][accept*=".pt"]').set_input_files(str(path))
    wait_idle(page)
    heads = page.get_by_role("combobox", name="Heads per layer (not stored in the file)")
    heads.wait_for(timeout=30_000)
    assert heads.input_value() == "8"  # the post's default, offered first
    pick(page, "Heads per layer (not stored in the file)", "4")
    page.get_by_text("No tokenizer came with this model").wait_for(timeout=30_000)  # none is chosen for the user
    page.get_by_text("the bundled BERT-uncased tokenizer (30,522 pieces)", exact=False).click()
    wait_idle(page)
    page.get_by_text("About: encoder.pt").click()
    page.get_by_text("2 layers × 4 heads, d_model 64, d_k 16").wait_for(timeout=30_000)
    pick(page, "Head", "2")
    plot = page.locator(".js-plotly-plot").first
    plot.locator(".gtitle", has_text="Layer 0, head 2").first.wait_for(timeout=60_000)  # not the chart before the pick
    title = plot.locator(".gtitle").first.text_content()
    assert "Layer 0, head 2" in title
    z = np.array(plot.evaluate("el => Array.from(el._fullData[0].z, row => Array.from(row))"), dtype=float)
    ids = torch.tensor([Tokenizer.from_file(BUNDLED_TOKENIZER).encode(TEXT).ids])
    expected = ref.run(model, ids)[1][0][0, 2].numpy()
    assert z.shape == expected.shape and np.abs(z - expected).max() <= 1e-5
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / "post-upload.png"), full_page=True)


def test_upload_a_zipped_hugging_face_folder(page, tmp_path):
    from safetensors.torch import load_file

    from tests.hf_fixtures import FIXTURES, zipped

    path = tmp_path / "gemma3_text.zip"
    path.write_bytes(zipped(FIXTURES / "gemma3_text"))
    type_text(page, "The animal didn't cross the street because it was too tired.")
    pick(page, "Model source", "Upload a checkpoint file")
    page.locator('input[type="file"][accept*=".zip"]').set_input_files(str(path))
    wait_idle(page)
    plot = page.locator(".js-plotly-plot").first
    # the page may still show the previous model's chart right after the upload: wait for the uploaded model's title
    plot.locator(".gtitle", has_text="Layer 0 (sliding window 6), head 0").first.wait_for(timeout=60_000)
    assert plot.locator(".gtitle").first.text_content().startswith("Layer 0 (sliding window 6), head 0")
    page.get_by_text("attends through a sliding window").first.wait_for(timeout=30_000)
    z = np.array(plot.evaluate("el => Array.from(el._fullData[0].z, row => Array.from(row))"), dtype=float)
    reference = load_file(str(FIXTURES / "gemma3_text" / "reference.safetensors"))["short.attentions"][0, 0]
    reference = reference.numpy()
    blocked = np.isnan(z)  # cells the causal mask and the window block are drawn grey, where the reference has 0
    assert blocked.any() and (reference[blocked] == 0).all()
    assert z.shape == reference.shape and np.abs(np.where(blocked, 0.0, z) - reference).max() <= 1e-5
    page.get_by_text("About: ").first.click()
    page.get_by_text("Read as Gemma 3").wait_for(timeout=30_000)
    page.screenshot(path=str(SHOTS / "gemma-zip.png"), full_page=True)
