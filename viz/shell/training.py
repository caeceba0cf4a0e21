"""Training runs as background jobs ("Watch it learn"): one run per spec, shared by everyone who asks for the same
spec (a lecturer trains once, the class watches the same snapshots through a link), one at a time by default
(``ATTENTION_LAB_TRAIN_JOBS``), paused, resumed or cancelled from the page. A finished run is written to the runs
folder (``ATTENTION_LAB_RUNS``) atomically; a cancelled one leaves nothing behind. While it trains, the run so far is
rewritten there every LIVE_EVERY seconds (``<key>.live.safetensors``), so the replicas of a server that share the
folder show it too: a student whose browser reached another replica watches the lecturer's run, not a Train button."""

from __future__ import annotations

import contextlib
import os
import threading
import time

from model.learn.loop import Run, TrainSpec, start, train
from model.learn.queue import claim_queued, mark_queued, unmark
from model.learn.store import (
    STOPPED,
    from_bytes,
    live_file_of,
    live_path,
    read,
    recover,
    runs_root,
    stopped_file_of,
    write,
)
from viz.shell import jobs
from viz.shell.cache import shared

#: after each step a run sleeps this fraction of the step's time, so the pages of everyone on the server stay quick
#: while it trains (ATTENTION_LAB_TRAIN_REST; 0: train flat out)
REST = float(os.environ.get("ATTENTION_LAB_TRAIN_REST", "0.5") or 0)
LIVE_EVERY = 2.0  # seconds between rewrites of a training run's live file (the pages redraw every 2 s)
LIVE_SHARE = 0.02  # at most this share of the training time goes to rewriting it
LIVE_STALE = 30.0  # a live file neither rewritten nor touched for this long belongs to a server that stopped
#: a run nobody has watched for this long stops, kept resumable, and frees its place (ATTENTION_LAB_UNWATCHED, s)
UNWATCHED = float(os.environ.get("ATTENTION_LAB_UNWATCHED", "300") or 300)
_live: dict[str, Run] = {}  # runs in training, by spec key: what viewers read while the job goes
_paused: dict[str, threading.Event] = {}
_watched: dict[str, float] = {}  # when a page last showed each training run (time.monotonic())
_stopped_why: dict[str, str] = {}  # why a run stopped before its end, while this server runs
_guard = threading.Lock()
_recovered = threading.Event()


class UnwatchedError(Exception):
    """Nobody has looked at the run for UNWATCHED seconds: it stops (kept, resumable) and frees its place."""


def watch(spec: TrainSpec) -> None:
    """A page shows ``spec``'s run now (its live view calls this every redraw)."""
    with _guard:
        _watched[spec.key] = time.monotonic()


def recover_once() -> None:
    """Once per process: live files left by a server that stopped become resumable runs (model.learn.store)."""
    if _recovered.is_set():
        return
    _recovered.set()
    for key in recover(runs_root(), LIVE_STALE):
        _stopped_why.setdefault(key, "the server stopped while it trained")
    for spec in claim_queued(runs_root()):  # runs that were waiting for a place: queued again, in their order
        if not (runs_root() / f"{spec.key}.safetensors").is_file():  # unless another replica finished it
            stopped = stopped_file_of(runs_root(), spec.key)
            start_training(spec, resume=stopped is not None and stopped.is_file())


def job_of(spec: TrainSpec) -> jobs.Job | None:
    return jobs.job_for(("train", spec.key))


def lower_priority(niceness: int = 10) -> None:
    """Let the calling thread yield the CPU to the server's other work: on Linux a thread has its own nice value,
    so pages (and other users) come first while a run trains; elsewhere nothing changes."""
    if hasattr(os, "setpriority") and hasattr(threading, "get_native_id"):
        with contextlib.suppress(OSError):
            os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), niceness)


def start_training(spec: TrainSpec, resume: bool = False) -> jobs.Job:
    """Train ``spec`` in the background unless it is training already (that job is returned); ``resume``: go on
    from where it stopped (its stopped file), exactly as if it had not."""
    key = spec.key
    watch(spec)
    running = job_of(spec)
    if running is not None and running.running:
        return running
    mark_queued(runs_root(), spec)  # kept across a restart until it starts (model/learn/queue.py)

    def work(job: jobs.Job) -> str | None:
        unmark(runs_root(), key)
        lower_priority()
        stopped = stopped_file_of(runs_root(), key) if resume else None
        run = from_bytes(stopped.read_bytes()) if stopped is not None and stopped.is_file() else start(spec)
        with _guard:
            _live[key] = run
            pause = _paused.setdefault(key, threading.Event())
            _stopped_why.pop(key, None)
            _watched[key] = time.monotonic()  # the wait in the queue is nobody's fault
        job.report(run.step, spec.steps)
        shown = Shown(run)
        try:

            def progress(done: int, total: int) -> None:
                job.report(done, total)
                shown.update()

            def paused() -> bool:
                with _guard:
                    unseen = time.monotonic() - _watched.get(key, 0.0)
                if unseen > UNWATCHED:
                    raise UnwatchedError
                shown.touch()  # still alive while paused: other replicas keep showing the run
                return pause.is_set()

            try:
                train(spec, run=run, progress=progress, cancel=job.stop.is_set, paused=paused, rest=REST)
            except UnwatchedError:
                write(run, runs_root(), suffix=STOPPED)  # between two steps: it goes on from here exactly
                with _guard:
                    _stopped_why[key] = f"nobody watched it for {UNWATCHED:.0f} s, so it gave up its place"
                return None
            write(run, runs_root())
            if stopped is not None:
                stopped.unlink(missing_ok=True)
            return key
        finally:
            with contextlib.suppress(OSError):
                live_file_of(runs_root(), key).unlink(missing_ok=True)
            with _guard:
                _live.pop(key, None)
                _paused.pop(key, None)

    return jobs.run(("train", key), "train", spec.steps, work, name=key)


class Shown:
    """A training run's live file: rewritten when it has a new snapshot, at most every LIVE_EVERY seconds and never
    for more than LIVE_SHARE of the training time (the file grows with every snapshot), and touched while the run
    waits, so that other replicas know it is alive."""

    def __init__(self, run: Run) -> None:
        self.run, self.at, self.wait, self.snapshots = run, 0.0, LIVE_EVERY, 0

    def update(self) -> None:
        now = time.monotonic()
        if now - self.at < self.wait:
            return
        if len(self.run.snapshots) == self.snapshots:
            self.touch()
            return
        try:
            write(self.run, runs_root(), live=True)
        except OSError:  # a full disk: the run trains on in memory (the live file only serves replicas and crashes)
            self.at = now
            return
        spent = time.monotonic() - now
        self.at, self.wait, self.snapshots = now, max(LIVE_EVERY, spent / LIVE_SHARE), len(self.run.snapshots)

    def touch(self) -> None:
        now = time.monotonic()
        if self.snapshots and now - self.at >= LIVE_EVERY:
            with contextlib.suppress(OSError):
                os.utime(live_file_of(runs_root(), self.run.spec.key))
            self.at = now


def live_run(spec: TrainSpec) -> Run | None:
    """The run of ``spec`` while it trains (its snapshots grow as it goes)."""
    with _guard:
        return _live.get(spec.key)


@shared("Reading the run…")
def stored_run(key: str) -> Run | None:
    """A finished run from the runs folder (None when there is none), read once and shared."""
    return read(runs_root(), key)


def run_of(spec: TrainSpec) -> Run | None:
    """The run to show for ``spec``: the one training now, else the finished one, else None."""
    live = live_run(spec)
    if live is not None:
        return live
    path = runs_root() / f"{spec.key}.safetensors"
    return stored_run(spec.key) if path.is_file() else None


def elsewhere(spec: TrainSpec) -> Run | None:
    """``spec``'s run as far as it went, when it trains on another replica sharing the runs folder (its live file
    is fresh) and neither here nor finished; else None. Read once per rewrite of the file, and shared."""
    if live_run(spec) is not None or (runs_root() / f"{spec.key}.safetensors").is_file():
        return None
    path = live_path(runs_root(), spec.key, LIVE_STALE)
    if path is None:
        return None
    try:
        return live_file(spec.key, path.stat().st_mtime_ns)
    except (OSError, ValueError):  # replaced or removed while it was read: the next redraw reads the new one
        return None


@shared()
def live_file(key: str, mtime: int) -> Run | None:
    """The live file of run ``key`` as written at ``mtime`` (nanoseconds; part of the cache key)."""
    path = live_path(runs_root(), key, LIVE_STALE)
    return from_bytes(path.read_bytes()) if path is not None else None


def pause(spec: TrainSpec, on: bool) -> None:
    with _guard:
        event = _paused.get(spec.key)
    if event is not None:
        event.set() if on else event.clear()


def is_paused(spec: TrainSpec) -> bool:
    with _guard:
        event = _paused.get(spec.key)
    return bool(event is not None and event.is_set())


def cancel(spec: TrainSpec) -> None:
    job = job_of(spec)
    if job is not None and job.running:
        job.stop.set()
    unmark(runs_root(), spec.key)  # a cancelled run that was still waiting is not queued again after a restart


@shared()
def learn_view(kind: str, key: str, snaps: int, done: int, theme, _progress, **selection):
    """A view of run ``key`` (viz.views.learn: "curves", "frame", "heads", "moments") as of ``snaps`` snapshots
    and ``done`` steps, built once and shared: a class watching one run live costs one build per change, not one
    per student."""
    from viz.views import learn

    return {"curves": learn.curves, "frame": learn.frame, "heads": learn.heads, "moments": learn.moments}[kind](
        _progress, theme, **selection
    )


def stopped_run(spec: TrainSpec) -> tuple[Run, str] | None:
    """``spec``'s run when it stopped before its end and can go on — (the run so far, why it stopped) — else None."""
    recover_once()
    path = stopped_file_of(runs_root(), spec.key)
    if path is None or not path.is_file() or live_run(spec) is not None:
        return None
    try:
        run = stopped_file(spec.key, path.stat().st_mtime_ns)
    except (OSError, ValueError):
        return None
    with _guard:
        why = _stopped_why.get(spec.key, "the server stopped while it trained")
    return run, why


@shared()
def stopped_file(key: str, mtime: int) -> Run:
    """A stopped run as written at ``mtime`` (nanoseconds; part of the cache key), read once and shared."""
    return from_bytes(stopped_file_of(runs_root(), key).read_bytes())
