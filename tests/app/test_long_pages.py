"""Every page on a text longer than the 512 tokens whose patterns are kept: the pages marked “whole text” read it
whole (a background run, then their figures of every token), the others show its first 512 tokens and say so; a
token in focus beyond 512 breaks no page."""

from __future__ import annotations

import time

import pytest

from tests.app.conftest import PAGES, figures, new_app

LONG = " ".join(["The animal did not cross the street because it was too tired, said the old dog."] * 60)
WHOLE = ("attention.py", "head_view.py", "overview.py", "metrics.py")  # the bundled encoder has no next-token head


def settle(at, timeout: float = 60.0):
    """Rerun until no background run is reported on the page (a long read, then the summary of every head)."""
    end = time.time() + timeout
    while time.time() < end:
        at.run()
        assert not at.exception, at.exception
        if not at.get("progress"):
            return at
        time.sleep(0.3)
    raise AssertionError("the long run did not finish")


@pytest.mark.slow  # every page, twice
def test_every_page_works_on_a_long_text():
    at = new_app()
    at.sidebar.text_area(key="text").set_value(LONG).run()
    notices = " ".join(w.value for w in at.warning)
    assert "The text has 1,082 tokens" in notices and "the first 512" in notices
    at.session_state["focus_query"] = 1000  # a token only the whole text has
    for page in PAGES:
        at.switch_page(page)
        settle(at)
        assert not at.error, (page, [e.value for e in at.error])
        titles = " ".join(f["layout"]["title"]["text"] for f in figures(at) if "title" in f["layout"])
        if page.endswith(WHOLE):
            assert "1,082 tokens" in titles or page.endswith("head_view.py"), (page, titles)
        else:
            assert "1,082" not in titles, page  # its first 512 tokens


def test_a_long_run_hands_freed_memory_back_after_every_layer(monkeypatch):
    """The server lets each thread's heap keep up to 1 GB of freed memory (model/memory.py); a long run trims it
    after every layer it reads or measures, before it reports the layer (SmolLM2 at 8,192 tokens: 0.2 GB)."""
    from viz.shell import longrun

    calls = []
    monkeypatch.setattr(longrun, "release_freed_memory", lambda: calls.append("trim"))

    class Job:
        def report(self, done: int, total: int, phase: str = "") -> None:
            calls.append(done)

    report = longrun._reporter(Job())
    for done in (1, 2, 3):
        report(done, 3)
    assert calls == ["trim", 1, "trim", 2, "trim", 3]


@pytest.mark.slow  # two long reads: 2.1-2.5 s on the 2-core box
def test_each_run_on_a_text_read_whole_hands_freed_memory_back(monkeypatch):
    """A text read whole: every finished run trims the heaps, which the server lets keep up to 1 GB freed each
    (model/memory.py), so that its pages' large temporaries do not pile up (SmolLM2 at 8,192 tokens: 0.1–0.2 GB
    while one switches layers); a short text's runs keep them for the next pass."""
    import model.memory

    calls = []
    monkeypatch.setattr(model.memory, "release_freed_memory", lambda: calls.append(1) or True)
    at = new_app()  # loading the model may trim (viz.shell.services)
    loaded = len(calls)
    at.run()
    assert len(calls) == loaded
    at.sidebar.text_area(key="text").set_value(LONG).run()
    settle(at)
    before = len(calls)
    at.run()
    assert not at.exception and len(calls) == before + 1
