"""A cold server's sessions start together without breaking each other's imports, and a model that failed to load
for a moment's reason is tried again instead of being remembered as broken (issue 48)."""

from __future__ import annotations

import threading
import time

import pytest

from tests.app.conftest import new_app
from viz.shell import boot


class FakeGC:
    """What import_once asks of the garbage collector, recorded instead of done to the test process."""

    def __init__(self) -> None:
        self.calls: list[tuple] = []

    def freeze(self) -> None:
        self.calls.append(("freeze",))

    def get_threshold(self) -> tuple[int, int, int]:
        return (700, 10, 10)

    def set_threshold(self, *values: int) -> None:
        self.calls.append(("set_threshold", *values))


def test_the_heavy_imports_run_once_and_one_session_at_a_time(monkeypatch):
    calls, inside, most = [], [0], [0]
    fake_gc = FakeGC()
    monkeypatch.setattr(boot, "gc", fake_gc)
    lock = threading.Lock()

    def slow_import(name):
        with lock:
            inside[0] += 1
            most[0] = max(most[0], inside[0])
        time.sleep(0.002)
        calls.append(name)
        with lock:
            inside[0] -= 1

    monkeypatch.setattr(boot.importlib, "import_module", slow_import)
    monkeypatch.setattr(boot, "_done", threading.Event())
    start = threading.Barrier(8)

    def session():
        start.wait()
        boot.import_once()

    threads = [threading.Thread(target=session) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert most[0] == 1 and calls == [*boot.HEAVY, *boot.APP]  # once, in order, never two at a time
    # the collector is set once, after the imports: their objects frozen, the youngest generation's threshold raised
    assert fake_gc.calls == [("freeze",), ("set_threshold", boot.YOUNG_THRESHOLD, 10, 10)]


@pytest.mark.slow
def test_a_model_that_failed_for_a_moment_is_tried_again(monkeypatch):
    import viz.shell.prepare as prepare

    real, tries = prepare.get_model, []

    def flaky(spec, device, data=None):
        if spec.kind == "minilm" and not tries:
            tries.append(spec)
            raise MemoryError("the server was short of memory")
        return real(spec, device, data)

    monkeypatch.setattr(prepare, "get_model", flaky)
    at = new_app()
    at.sidebar.selectbox(key="model_kind").set_value("minilm").run()
    assert not at.exception
    said = " ".join(e.value for e in at.error) + " ".join(w.value for w in at.warning)
    assert "MemoryError" in said and "tried again" in said, said
    at.run()  # the next run: loaded this time
    assert not at.exception and at.session_state["active_spec"].kind == "minilm"
