"""Training runs survive a crash and nobody's absence (issue 48): a run is resumable from its live file, exactly as
if it had not stopped; after a restart a stale live file becomes a stopped run the page offers to resume (an
unreadable one is removed); a run nobody watches stops, kept, and gives its place to the next."""

from __future__ import annotations

import os
import time

import pytest
import torch

from model.learn.loop import TrainSpec, start, train
from model.learn.store import STOPPED, from_bytes, recover, to_bytes
from tests.app.conftest import new_app
from tests.app.test_learn_page import PAGE, runs, wait_for  # noqa: F401  (runs: a fixture)
from viz.shell import training

SPEC = TrainSpec(n_layers=1, n_heads=2, d_model=16, steps=90, snapshot_every=20, batch=8)


class CrashError(Exception):
    pass


def crashed_at(spec: TrainSpec, step: int) -> bytes:
    """The live file a run leaves when its server dies at ``step``."""
    run, saved = start(spec), {}

    def progress(done: int, total: int) -> None:
        if done == step:
            saved["live"] = to_bytes(run, state=True)
            raise CrashError

    with pytest.raises(CrashError):
        train(spec, run=run, progress=progress)
    return saved["live"]


@pytest.mark.slow
def test_a_run_goes_on_from_its_live_file_exactly():
    full = train(SPEC)
    back = from_bytes(crashed_at(SPEC, 50))
    assert back.step == 50 and back.resume is not None
    done = train(SPEC, run=back)
    ours, theirs = done.model.state_dict(), full.model.state_dict()
    assert all(torch.equal(ours[k], theirs[k]) for k in ours) and done.losses == full.losses
    assert [s.step for s in done.snapshots] == [s.step for s in full.snapshots]


@pytest.mark.slow  # trains two small runs (1.5 s)
def test_after_a_restart_stale_live_files_become_stopped_runs_or_go(tmp_path):
    live = tmp_path / f"{SPEC.key}.live.safetensors"
    live.write_bytes(crashed_at(SPEC, 50))
    other = TrainSpec(n_layers=1, n_heads=2, d_model=16, steps=40, snapshot_every=20, batch=8, seed=1)
    old = tmp_path / f"{other.key}.live.safetensors"
    old.write_bytes(to_bytes(train(other)))  # without its training state: cannot go on
    partial = tmp_path / ".partial-x.safetensors"
    partial.write_bytes(b"half")
    fresh = tmp_path / f"{'f' * 12}.live.safetensors"
    fresh.write_bytes(b"being written")
    for path in (live, old, partial):
        os.utime(path, (time.time() - 100, time.time() - 100))
    assert recover(tmp_path, stale=30) == [SPEC.key]
    assert (tmp_path / f"{SPEC.key}{STOPPED}.safetensors").is_file() and not live.exists()
    assert not old.exists() and not partial.exists() and fresh.exists()  # a fresh one is someone's run


@pytest.mark.slow
def test_a_run_nobody_watches_stops_frees_its_place_and_resumes(runs, monkeypatch):  # noqa: F811
    monkeypatch.setattr(training, "UNWATCHED", 0.5)
    monkeypatch.setattr(training, "REST", 0.0)
    long = TrainSpec(n_layers=1, n_heads=2, d_model=16, steps=20_000, snapshot_every=20, batch=8)
    job = training.start_training(long)
    wait_for(job, 60)
    assert job.result is None and not job.error and not job.cancelled
    stopped, why = training.stopped_run(long)
    assert 0 < stopped.step < long.steps and "nobody watched it" in why
    monkeypatch.setattr(training, "UNWATCHED", 1e9)
    nxt = training.start_training(SPEC)  # the place is free: the next run trains at once
    wait_for(nxt, 60)
    assert nxt.result == SPEC.key
    at_step = stopped.step
    resumed = training.start_training(long, resume=True)
    end = time.time() + 10
    while resumed.done <= at_step and time.time() < end:
        time.sleep(0.05)
    assert resumed.done > at_step  # went on from where it stopped, not from step 0
    training.cancel(long)
    wait_for(resumed, 60)


@pytest.mark.slow
def test_the_page_offers_to_resume_a_run_its_server_lost(runs):  # noqa: F811
    small = TrainSpec(n_layers=1, n_heads=2, d_model=16, steps=100, lr=0.003, positional="rope")
    live = runs / f"{small.key}.live.safetensors"
    live.write_bytes(crashed_at(small, 60))
    os.utime(live, (time.time() - 100, time.time() - 100))
    training._recovered.clear()
    at = new_app()
    at.switch_page(PAGE).run()
    for key, value in {"learn_layers": 1, "learn_heads": 2, "learn_d_model": 16, "learn_steps": 100}.items():
        at.number_input(key=key).set_value(value)
    at.run()
    assert not at.exception, at.exception
    assert any("stopped at step 60 of 100: the server stopped while it trained" in i.value for i in at.info)
    at.button(key="learn_resume_stopped").click().run()
    job = training.job_of(small)
    wait_for(job, 60)
    assert job.result == small.key and not (runs / f"{small.key}{STOPPED}.safetensors").exists()
    full = train(small)
    done = training.stored_run(small.key)
    assert done.losses == full.losses  # resumed at 60, the same run as one never stopped


def test_queued_runs_are_claimed_once_in_their_order_and_bad_files_go(tmp_path):
    from model.learn.queue import QUEUED, claim_queued, mark_queued, unmark

    first = TrainSpec(n_layers=1, n_heads=2, d_model=16, steps=40, snapshot_every=20, batch=8, seed=3)
    second = TrainSpec(n_layers=1, n_heads=2, d_model=16, steps=40, snapshot_every=20, batch=8, seed=4)
    gone = TrainSpec(n_layers=1, n_heads=2, d_model=16, steps=40, snapshot_every=20, batch=8, seed=5)
    for spec in (first, second, gone):
        assert mark_queued(tmp_path, spec).name == f"{spec.key}{QUEUED}"
        time.sleep(0.01)
    unmark(tmp_path, gone.key)  # it started (or was cancelled): not queued again
    (tmp_path / f"{'a' * 12}{QUEUED}").write_text('{"format": "attention-lab-queued-run/1", "spec": {"steps": -1}}')
    (tmp_path / f"{'b' * 12}{QUEUED}").write_text("[" * 100_000)  # not a queued run: removed, nothing raised
    assert claim_queued(tmp_path) == [first, second]
    assert claim_queued(tmp_path) == [] and not list(tmp_path.iterdir())  # claimed once; nothing left behind
    assert mark_queued(tmp_path / "x", TrainSpec()) is not None  # the folder is made when missing


@pytest.mark.slow  # a run trains in the background
def test_a_run_that_was_waiting_when_the_server_stopped_is_queued_again(runs, monkeypatch):  # noqa: F811
    """kill -9 while one run trains and another waits: after the restart, the waiting one is queued again (the live
    file of the one that trained becomes a stopped run, as before); a cancelled one is not."""
    from model.learn.queue import QUEUED, mark_queued

    waiting = TrainSpec(n_layers=1, n_heads=2, d_model=16, steps=30, snapshot_every=10, batch=8, seed=7)
    dropped = TrainSpec(n_layers=1, n_heads=2, d_model=16, steps=30, snapshot_every=10, batch=8, seed=8)
    mark_queued(runs, waiting)  # what the stopped server left
    mark_queued(runs, dropped)
    training.cancel(dropped)  # cancelled before the restart
    monkeypatch.setattr(training, "_recovered", __import__("threading").Event())  # a fresh process
    monkeypatch.setattr(training, "REST", 0.0)
    training.recover_once()
    job = training.job_of(waiting)
    assert job is not None and training.job_of(dropped) is None
    wait_for(job, 60)
    assert job.result == waiting.key and (runs / f"{waiting.key}.safetensors").is_file()
    assert not list(runs.glob(f"*{QUEUED}"))


@pytest.mark.slow
def test_a_waiting_run_is_written_down_until_it_starts(runs, monkeypatch):  # noqa: F811
    from model.learn.queue import QUEUED

    monkeypatch.setattr(training, "REST", 0.0)
    long = TrainSpec(n_layers=1, n_heads=2, d_model=16, steps=20_000, snapshot_every=20, batch=8, seed=9)
    first = training.start_training(long)
    end = time.time() + 30
    while training.live_run(long) is None and time.time() < end:  # it has its place
        time.sleep(0.05)
    nxt = training.start_training(SPEC)  # one place: it waits
    assert nxt.queued and (runs / f"{SPEC.key}{QUEUED}").is_file()
    assert not (runs / f"{long.key}{QUEUED}").exists()  # the first one started: not waiting any more
    training.cancel(long)
    wait_for(first, 60)
    wait_for(nxt, 60)
    assert nxt.result == SPEC.key and not list(runs.glob(f"*{QUEUED}"))
