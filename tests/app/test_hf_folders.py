"""Hugging Face folders in the dashboard: a zipped folder uploaded, a folder as a local path; the map equals what
transformers computed and the sidebar names the family."""

from __future__ import annotations

import numpy as np
import pytest
from safetensors.torch import load_file

from tests.app.conftest import figures, new_app
from tests.app.test_post_checkpoint import matrix
from tests.hf_fixtures import FIXTURES, zipped

SHORT = "The animal didn't cross the street because it was too tired."


def captions(at) -> list[str]:
    return [c.value for c in at.sidebar.caption]


@pytest.mark.slow
def test_zipped_folder_upload_shows_transformers_weights():
    at = new_app()
    at.sidebar.text_area(key="text").set_value(SHORT).run()
    at.sidebar.selectbox(key="model_kind").set_value("upload").run()
    at.sidebar.file_uploader(key="upload_file").set_value(("qwen2.zip", zipped(FIXTURES / "qwen2"), "application/zip"))
    at.run()
    assert not at.exception and not at.sidebar.error, [e.value for e in at.sidebar.error]
    assert "Read as Qwen2 (LLaMA with Q/K/V biases; tied head)." in captions(at)
    at.selectbox(key="head").set_value(3).run()
    shown = matrix(figures(at)[0]["data"][0]["z"])
    reference = load_file(str(FIXTURES / "qwen2" / "reference.safetensors"))["short.attentions"][0, 3].numpy()
    masked = np.isnan(shown)  # cells the causal mask blocks are drawn grey, not as weight 0
    assert np.array_equal(masked, np.triu(np.ones(shown.shape, dtype=bool), 1))
    assert np.abs(np.where(masked, 0.0, shown) - reference).max() <= 1e-5


@pytest.mark.slow
def test_local_folder_with_a_sliding_window(monkeypatch):
    monkeypatch.setenv("ATTENTION_LAB_MODEL_DIRS", str(FIXTURES))
    at = new_app()
    at.sidebar.text_area(key="text").set_value(SHORT).run()
    at.sidebar.selectbox(key="model_kind").set_value("folder").run()
    at.sidebar.text_input(key="folder_path").set_value(str(FIXTURES / "mistral")).run()
    assert not at.exception and not at.sidebar.error
    assert "Read as Mistral (LLaMA with a sliding window 6; its own head)." in captions(at)
    assert figures(at)[0]["layout"]["title"]["text"].startswith("Layer 0 (sliding window 6), head 0")
    assert any("attends through a sliding window" in c.value for c in at.main.caption)


@pytest.mark.slow
def test_a_folder_without_its_tokenizer_offers_one(tmp_path, monkeypatch):
    import shutil

    folder = tmp_path / "bert"
    shutil.copytree(FIXTURES / "bert", folder)
    (folder / "tokenizer.json").unlink()
    monkeypatch.setenv("ATTENTION_LAB_MODEL_DIRS", str(tmp_path))
    at = new_app()
    before = [e.label for e in at.sidebar.expander if e.label.startswith("About:")]
    at.sidebar.selectbox(key="model_kind").set_value("folder").run()
    at.sidebar.text_input(key="folder_path").set_value(str(folder)).run()
    assert at.sidebar.radio(key="ckpt_tokenizer").value == "choose"  # nothing chosen for the user
    said = " ".join(i.value for i in at.sidebar.info)
    assert "looked for tokenizer.json, vocab.txt, vocab.json + merges.txt, tokenizer.model or a .gguf" in said
    # the model shown before stays: the folder is not loaded with a tokenizer nobody chose
    assert [e.label for e in at.sidebar.expander if e.label.startswith("About:")] == before
    at.sidebar.radio(key="ckpt_tokenizer").set_value("ids").run()
    at.sidebar.text_area(key="text").set_value("2 17 40 3").run()
    assert not at.exception and not at.sidebar.error, [e.value for e in at.sidebar.error]
    assert figures(at)[0]["data"][0]["y"] == ["2", "17", "40", "3"]


HEADS = FIXTURES.parent / "hf_heads"


@pytest.mark.slow
def test_a_folder_with_its_mlm_head_and_vocab_txt_fills_masks(monkeypatch):
    """A BertForMaskedLM saved as pytorch_model.bin with only vocab.txt: its own head fills the mask, its files and
    tensors are reported in the About box."""
    monkeypatch.setenv("ATTENTION_LAB_MODEL_DIRS", str(HEADS))
    at = new_app()
    at.sidebar.text_area(key="text").set_value("The animal didn't cross the [MASK].").run()
    at.sidebar.selectbox(key="model_kind").set_value("folder").run()
    at.sidebar.text_input(key="folder_path").set_value(str(HEADS / "bert_mlm")).run()
    assert not at.exception and not at.sidebar.error, [e.value for e in at.sidebar.error]
    report = " ".join(m.value for m in at.sidebar.markdown)
    assert "Files read: config.json, pytorch\\_model.bin, vocab.txt" in report
    assert "Tensors: 42 of 42 used" in report and "Tokenizer: vocab.txt (WordPiece, lowercased" in report
    at.switch_page("viz/pages/lessons.py").run()
    at.segmented_control(key="lesson_section").set_value("Masked tokens").run()
    assert not at.exception
    assert "has no masked" not in " ".join(e.value for e in [*at.main.warning, *at.main.info])
    assert figures(at), "the MLM head's predictions are drawn"


@pytest.mark.slow
def test_a_file_without_its_head_is_said_to_hold_none(monkeypatch):
    monkeypatch.setenv("ATTENTION_LAB_MODEL_DIRS", str(FIXTURES))
    at = new_app()
    at.sidebar.text_area(key="text").set_value("The animal didn't cross the street.").run()
    at.sidebar.selectbox(key="model_kind").set_value("folder").run()
    at.sidebar.text_input(key="folder_path").set_value(str(FIXTURES / "bert")).run()
    at.switch_page("viz/pages/lessons.py").run()
    at.segmented_control(key="lesson_section").set_value("Masked tokens").run()
    said = " ".join(e.value for e in [*at.main.warning, *at.main.info, *at.main.caption])
    assert "files (config.json, model.safetensors, tokenizer.json) hold no masked-language-model head" in said
