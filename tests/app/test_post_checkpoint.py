"""The post's encoder through the dashboard: an upload and a local path, the heads question, the tokenizer
choices, and the attention map equal to the post's own softmax weights; paths outside the shared folders get one
sentence."""

from __future__ import annotations

import base64
import io

import numpy as np
import pytest
import torch
from safetensors.torch import save as st_save
from safetensors.torch import save_file

from model.io.catalog import BUNDLED_TOKENIZER
from model.io.tokenizer import Tokenizer
from tests.app.conftest import figures, new_app
from tests.reference import post_encoder as ref
from viz.shell.paths import REFUSED, share_command

TEXT = "The animal didn't cross the street because it was too tired."


def matrix(z) -> np.ndarray:
    """A heatmap's z as plotly sends it (a typed array, or nested lists)."""
    if isinstance(z, dict):
        shape = tuple(int(n) for n in z["shape"].split(","))
        return np.frombuffer(base64.b64decode(z["bdata"]), z["dtype"]).reshape(shape)
    return np.array(z, dtype=float)


@pytest.fixture(scope="module")
def post():
    return ref.make(seed=4)


def reference_pattern(model, layer: int, head: int, text: str = TEXT) -> np.ndarray:
    ids = torch.tensor([Tokenizer.from_file(BUNDLED_TOKENIZER).encode(text).ids])
    return ref.run(model, ids)[1][layer][0, head].numpy()


def shown_map(at) -> tuple[str, np.ndarray]:
    fig = figures(at)[0]
    return fig["layout"]["title"]["text"], matrix(fig["data"][0]["z"])


def sidebar_text(at) -> str:
    return " ".join(e.value for e in [*at.sidebar.error, *at.sidebar.warning, *at.sidebar.info])


def saved(post, name: str) -> bytes:
    if name.endswith(".pt"):
        buf = io.BytesIO()
        torch.save(post.state_dict(), buf)
        return buf.getvalue()
    return st_save({k: v.contiguous() for k, v in post.state_dict().items()})


@pytest.mark.parametrize("name", ["encoder.pt", "encoder.safetensors"])
@pytest.mark.slow
def test_upload_asks_for_heads_and_shows_the_posts_weights(post, name):
    at = new_app()
    at.sidebar.text_area(key="text").set_value(TEXT).run()
    at.sidebar.selectbox(key="model_kind").set_value("upload").run()
    at.sidebar.file_uploader(key="upload_file").set_value((name, saved(post, name), "application/x")).run()
    assert not at.exception, at.exception
    heads = at.sidebar.selectbox(key="ckpt_heads")
    assert heads.options == ["1", "2", "4", "8", "16", "32", "64"] and heads.value == 8  # the post's default
    assert at.sidebar.radio(key="ckpt_tokenizer").value == "choose"  # nothing chosen for the user
    at.sidebar.radio(key="ckpt_tokenizer").set_value("bundled").run()  # the post's readers use BERT's tokenizer
    heads.set_value(4).run()
    at.selectbox(key="layer").set_value(1).run()
    at.selectbox(key="head").set_value(3).run()
    title, shown = shown_map(at)
    assert "Layer 1, head 3" in title
    assert np.abs(shown - reference_pattern(post, 1, 3)).max() <= 1e-5
    assert f"About: {name}" in [e.label for e in at.sidebar.expander]
    assert "Read as the post's TransformerEncoder: 4 heads (as chosen), pre-norm blocks." in [
        c.value for c in at.sidebar.caption
    ]


@pytest.mark.slow
def test_local_folder_with_tokenizer_and_paths_outside_refused_alike(post, tmp_path, monkeypatch):
    shared = tmp_path / "models"
    (shared / "run").mkdir(parents=True)
    save_file({k: v.contiguous() for k, v in post.state_dict().items()}, str(shared / "run" / "encoder.safetensors"))
    (shared / "run" / "tokenizer.json").write_text(Tokenizer.from_file(BUNDLED_TOKENIZER).to_str())
    (tmp_path / "secret.pt").write_bytes(b"not yours")
    monkeypatch.setenv("ATTENTION_LAB_MODEL_DIRS", str(shared))
    at = new_app()
    at.sidebar.text_area(key="text").set_value(TEXT).run()
    at.sidebar.selectbox(key="model_kind").set_value("folder").run()
    answers = []
    for outside in (tmp_path / "secret.pt", tmp_path / "missing.pt", "/etc/passwd", shared / ".." / "secret.pt"):
        at.sidebar.text_input(key="folder_path").set_value(str(outside)).run()
        assert not at.exception
        answers.append([e.value for e in at.sidebar.error])
        command = [c.value for c in at.sidebar.code]
        assert command == [share_command(str(outside))], command  # built from the typed text, not the disk
    assert all(a == [REFUSED] for a in answers), answers  # one sentence: nothing tells what exists out there
    at.sidebar.text_input(key="folder_path").set_value(str(shared / "run")).run()
    assert "ckpt_tokenizer" not in [r.key for r in at.sidebar.radio]  # its tokenizer.json is beside it
    at.sidebar.selectbox(key="ckpt_heads").set_value(4).run()
    assert not at.exception and not at.sidebar.error
    title, shown = shown_map(at)
    assert "Layer 0, head 0" in title
    assert np.abs(shown - reference_pattern(post, 0, 0)).max() <= 1e-5


@pytest.mark.slow
def test_tokenizer_choices_upload_and_token_ids(post):
    buf = io.BytesIO()
    torch.save({"model_state_dict": post.state_dict(), "config": {"n_heads": 4}}, buf)
    at = new_app()
    at.sidebar.selectbox(key="model_kind").set_value("upload").run()
    at.sidebar.file_uploader(key="upload_file").set_value(("ckpt.pt", buf.getvalue(), "application/x")).run()
    assert "ckpt_heads" not in [s.key for s in at.sidebar.selectbox]  # the stored config says 4
    at.sidebar.radio(key="ckpt_tokenizer").set_value("upload").run()
    assert "Choose the tokenizer.json" in sidebar_text(at)
    tok_json = Tokenizer.from_file(BUNDLED_TOKENIZER).to_str().encode()
    at.sidebar.file_uploader(key="tokenizer_file").set_value(("tokenizer.json", tok_json, "application/json")).run()
    at.sidebar.text_area(key="text").set_value(TEXT).run()
    assert not at.exception and not at.sidebar.error
    assert np.abs(shown_map(at)[1] - reference_pattern(post, 0, 0)).max() <= 1e-5
    at.sidebar.radio(key="ckpt_tokenizer").set_value("ids").run()
    assert "token ids from 0 to 30,521" in sidebar_text(at)  # the sentence is not ids yet: say what to type
    assert any("token ids from 0 to 30,521" in e.value for e in at.main.error)  # where the page would be
    at.sidebar.text_area(key="text").set_value("101 1996 4937 2938 102").run()
    assert not at.exception and not at.sidebar.error
    fig = figures(at)[0]
    assert fig["data"][0]["y"][:2] == ["101", "1996"]
