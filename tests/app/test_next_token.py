"""The Next token page with a decoder (a tiny LLaMA GGUF loaded as a local file): predictions at once,
generation on request, and the generated text appended to the user's."""

from __future__ import annotations

import pytest

from tests.app.conftest import figures, new_app
from tests.security.gguf_files import write_tiny_gguf


@pytest.mark.slow
def test_generate_on_request_then_append(tmp_path, monkeypatch):
    monkeypatch.setenv("ATTENTION_LAB_MODEL_DIRS", str(tmp_path))  # the folder this server shares for models
    path = write_tiny_gguf(tmp_path / "tiny.gguf")
    at = new_app()
    at.sidebar.selectbox(key="model_kind").set_value("folder").run()
    at.sidebar.text_input(key="folder_path").set_value(str(path)).run()
    at.sidebar.text_area(key="text").set_value("the then the").run()
    at.switch_page("viz/pages/next_token.py").run()
    assert not at.exception, at.exception
    (predictions,) = figures(at)  # generation waits for its button
    assert "What comes after" in predictions["layout"]["title"]["text"]
    assert any("Press Generate" in c.value for c in at.caption)
    at.button(key="gen_go").click().run()
    assert not at.exception, at.exception
    maps = [f for f in figures(at) if f["layout"]["title"]["text"].startswith("Generating")]
    assert len(maps) == 1
    rows = int(maps[0]["data"][0]["z"]["shape"].split(",")[0])  # plotly sends the matrix as a typed array
    assert rows == at.slider(key="gen_n").value  # one row per generated token
    before = at.sidebar.text_area(key="text").value
    at.button(key="gen_append").click().run()
    assert not at.exception
    after = at.sidebar.text_area(key="text").value
    assert after.startswith(before) and len(after) > len(before)
