"""A page waiting on a background job wakes at the job's report, not at its fragment's next tick (viz/shell/jobs.py)."""

from __future__ import annotations

import threading
import time

import pytest

from viz.shell import jobs


def _job(name: str, work) -> jobs.Job:
    return jobs.run(("test-wait", name, time.monotonic()), "test-wait", 3, work, name=name)


def test_a_waiting_page_wakes_when_the_report_it_needs_arrives():
    go = threading.Event()

    def work(job: jobs.Job) -> None:
        go.wait(10)
        job.report(1, 3)  # the layer the page shows
        job.stop.wait(5)  # the rest of the pass (a real pass checks stop: so does this one, or exit waits on it)
        job.report(3, 3)

    job = _job("wakes", work)
    try:
        assert not job.wait_for(lambda: job.done >= 1, 0.1)  # nothing yet: the wait ends at its timeout
        threading.Timer(0.2, go.set).start()
        start = time.monotonic()
        assert job.wait_for(lambda: job.done >= 1, 10)
        assert time.monotonic() - start < 2  # at the report (0.2 s), not at the end of the run or of the timeout
    finally:
        job.stop.set()


def test_a_waiting_page_wakes_when_the_job_ends_without_what_it_needs():
    def work(job: jobs.Job) -> None:
        time.sleep(0.2)
        raise RuntimeError("the pass failed")

    job = _job("ends", work)
    start = time.monotonic()
    assert not job.wait_for(lambda: job.done >= 1, 10)
    assert time.monotonic() - start < 2 and job.finished and "the pass failed" in job.error


def _watched_run(kind: str, sessions: set[str]) -> tuple[jobs.Job, threading.Event]:
    """A run of ``kind`` that reports every 10 ms until stopped (at most 10 s), noted as asked for by
    ``sessions``; the event is set once it has started."""
    started = threading.Event()

    def work(job: jobs.Job) -> None:
        started.set()
        for step in range(1000):
            if job.stop.is_set():
                raise jobs.Cancelled
            job.report(step, 1000)
            time.sleep(0.01)

    job = jobs.run(("test-let-go", kind, time.monotonic()), kind, 1000, work, name="let-go")
    job.sessions.update(sessions)
    assert started.wait(10)
    return job


def test_a_long_run_whose_sessions_all_left_is_let_go_after_the_grace(monkeypatch):
    """Issue 51: a closed tab's long read held the server's one place for long runs until its last layer (the
    needle lesson of the next visitor waited 115 s of CPU behind it in CI)."""
    connected = {"a": True, "b": True}
    monkeypatch.setattr(jobs, "_connected", lambda s: connected.get(s, False))
    monkeypatch.setenv("ATTENTION_LAB_LET_GO_S", "0.15")
    monkeypatch.setattr(jobs, "CHECK_EVERY_S", 0.05)
    job = _watched_run("long", {"a", "b"})
    try:
        connected["a"] = False  # one of two tabs closed: the other still watches
        time.sleep(0.3)
        assert job.running and not job.let_go
        connected["b"] = False
        gone = time.monotonic()
        job.thread.join(10)
        assert job.finished and job.cancelled and job.let_go
        assert time.monotonic() - gone < 3  # after the grace, at one of the run's next reports
    finally:
        job.stop.set()


@pytest.mark.slow  # waits out a grace: 1.4 s
def test_a_session_back_within_the_grace_keeps_the_run_and_other_kinds_run_to_the_end(monkeypatch):
    connected = {"a": False}
    monkeypatch.setattr(jobs, "_connected", lambda s: connected.get(s, False))
    monkeypatch.setenv("ATTENTION_LAB_LET_GO_S", "1")
    monkeypatch.setattr(jobs, "CHECK_EVERY_S", 0.05)
    long_run, training = _watched_run("long", {"a"}), _watched_run("train", {"a"})
    try:
        time.sleep(0.1)
        connected["a"] = True  # a reload reconnected within the grace
        time.sleep(0.3)
        assert long_run.running and not long_run.let_go
        connected["a"] = False
        long_run.thread.join(10)
        assert long_run.let_go
        assert training.running and not training.let_go  # kept on disk for whoever comes back: never let go
    finally:
        long_run.stop.set()
        training.stop.set()


def test_without_a_server_or_a_session_nothing_is_let_go(monkeypatch):
    """A notebook, a test, a background thread: nobody to ask, so a run goes on (no Streamlit server runs here)."""
    monkeypatch.setenv("ATTENTION_LAB_LET_GO_S", "0")
    monkeypatch.setattr(jobs, "CHECK_EVERY_S", 0.0)
    monkeypatch.setattr(jobs, "LET_GO", {"long", "free"})  # a kind with no limit of places: both run at once
    assert jobs._connected("anyone") is None
    asked, nobody = _watched_run("free", {"someone"}), _watched_run("free", set())
    try:
        time.sleep(0.15)
        assert asked.running and nobody.running and not asked.let_go and not nobody.let_go
    finally:
        asked.stop.set()
        nobody.stop.set()


def test_a_queued_run_whose_sessions_left_never_starts(monkeypatch):
    monkeypatch.setattr(jobs, "_connected", lambda s: False)
    monkeypatch.setenv("ATTENTION_LAB_LET_GO_S", "0")
    monkeypatch.setenv("ATTENTION_LAB_LONGQ_JOBS", "1")
    monkeypatch.setattr(jobs, "LET_GO", {"long", "longq"})
    first = _watched_run("longq", set())  # holds the one place, asked for by nobody a server knows
    ran = threading.Event()
    queued = jobs.run(("test-let-go", "queued", time.monotonic()), "longq", 1, lambda job: ran.set(), name="queued")
    queued.sessions.add("gone")
    assert queued.queued
    first.stop.set()
    queued.thread.join(10)
    assert queued.let_go and queued.cancelled and not ran.is_set()


class _Running:
    """A job in the middle of its run, recording the waits asked of it."""

    kind, phase, done, total, queued, finished = "test-progress", "Reading", 3, 30, False, False

    def __init__(self) -> None:
        self.started, self.stop, self.waits = time.perf_counter(), threading.Event(), []

    def wait_for(self, ready, timeout: float) -> bool:
        self.waits.append(timeout)
        return False


@pytest.mark.parametrize(
    ("page_goes_on", "fragment_alone", "waits"),
    [(False, False, True), (False, True, True), (True, True, True), (True, False, False)],
)
def test_a_progress_bar_waits_for_what_its_page_needs_only_where_nothing_is_left_to_draw(
    monkeypatch, page_goes_on, fragment_alone, waits
):
    """The bar is drawn, then the next report waited for: in the fragment's own reruns, and in the page's run when
    the page stops at the bar; not in the page's run when the page draws on below it (a layer read already)."""
    from viz.shell import longrun

    monkeypatch.setattr(longrun, "_rerun_of_fragment", lambda: fragment_alone)
    job = _Running()
    longrun.progress_of(job, "layer", lambda: False, page_goes_on)
    assert job.waits == ([longrun.WAIT_S] if waits else [])
