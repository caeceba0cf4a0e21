"""The corpus page headless: run the bundled held-out documents in the background, see the profile, come back to
it instantly; choosing a file asks for one (parse errors: tests/model/test_profile.py)."""

from __future__ import annotations

import base64
import time

import numpy as np
import pytest

from tests.app.conftest import figures, new_app

PAGE = "viz/pages/corpus.py"


@pytest.fixture
def profiles(tmp_path, monkeypatch):
    monkeypatch.setenv("ATTENTION_LAB_PROFILES", str(tmp_path))
    return tmp_path


def run_until(at, done, timeout: float = 60.0):
    end = time.time() + timeout
    while time.time() < end:
        at.run()
        assert not at.exception, at.exception
        if done(at):
            return at
        time.sleep(0.3)
    raise AssertionError("the corpus run did not finish")


@pytest.mark.slow  # a background run polled until done
def test_a_corpus_run_in_the_background_then_instantly_again(profiles):
    at = new_app()
    at.switch_page(PAGE).run()
    at.number_input(key="corpus_docs").set_value(12).run()
    assert not at.exception and not at.get("plotly_chart")
    at.button(key="corpus_run").click().run()
    run_until(at, lambda a: len(a.get("plotly_chart")) == 3)
    (folder,) = [p for p in profiles.iterdir()]
    assert (folder / "heads.parquet").is_file() and not folder.name.startswith(".tmp")
    captions = " ".join(c.value for c in at.caption)
    assert "Each dot is one of 24 heads, averaged over 12 documents" in captions
    scatter = figures(at)[0]
    x = scatter["data"][0]["x"]  # plotly sends numbers as base64 ("bdata") when it can
    assert len(np.frombuffer(base64.b64decode(x["bdata"]), x["dtype"]) if isinstance(x, dict) else x) == 24
    fresh = new_app()  # another session: the stored profile, no run
    fresh.switch_page(PAGE).run()
    fresh.number_input(key="corpus_docs").set_value(12).run()
    assert len(fresh.get("plotly_chart")) == 3 and "corpus_run" not in {b.key for b in fresh.button}


@pytest.mark.slow
def test_choosing_my_file_asks_for_one(profiles):
    at = new_app()
    at.switch_page(PAGE).run()
    at.radio(key="corpus_source").set_value("my .txt or .jsonl file").run()
    assert not at.exception
    assert any("Choose a corpus" in i.value for i in at.info)
