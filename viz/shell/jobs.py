"""Background work, shared by every session: one thread per job key (a corpus run, a long text read whole), with
progress, a cancel switch and a queue per kind of job, so that a long run never holds a page's request and a
classroom's users share one run instead of starting thirty.

A job of a kind waits for a free place (``ATTENTION_LAB_<KIND>_JOBS``, default 1 for long texts and training
runs) and says how many runs are ahead of it; other users' pages are served meanwhile (captures on a shared model
run side by side: model/capture.py). Corpus profiles are written under ATTENTION_LAB_PROFILES (default: ./profiles).

A text read whole and the needle lesson's haystacks (kind "long", one place by default) are let go once nobody
who asked for them has the app open: every session that starts or looks at such a job is noted, and when none of
them has been connected for ``ATTENTION_LAB_LET_GO_S`` seconds (default 20: a reload reconnects well within it) the
run stops at its next report, so a closed tab's text no longer holds the server's one place for long runs (the next
visitor of that text starts it again). Training runs and corpus profiles are kept on disk for whoever comes back:
they run to the end.
"""

from __future__ import annotations

import atexit
import errno
import os
import threading
import time
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from streamlit.runtime import Runtime
from streamlit.runtime.scriptrunner import get_script_run_ctx

from model.io.catalog import ModelSpec
from model.io.state import LoadedModel
from model.long import Cancelled
from model.profile.corpus import corpus_hash
from model.profile.job import CancelledError
from model.profile.run import model_key, run_profile
from model.profile.store import profile_dir

ROOT = Path(__file__).resolve().parents[2]
#: runs of each kind at once, unless ATTENTION_LAB_<KIND>_JOBS says otherwise (0 or missing kind: no limit)
PLACES = {"corpus": 0, "long": 1, "train": 1}
#: kinds of run stopped once no session that asked for them is connected (the module's note)
LET_GO = {"long"}
LET_GO_S = 20.0
CHECK_EVERY_S = 1.0  # how often a run's reports ask whether anyone still watches it


def let_go_after(environ=os.environ) -> float:
    """Seconds a run of a LET_GO kind goes on after the last session that asked for it disconnected."""
    try:
        return max(0.0, float(environ.get("ATTENTION_LAB_LET_GO_S", LET_GO_S)))
    except ValueError:
        return LET_GO_S


def _session_id() -> str | None:
    """The session whose script asks (None from a background thread, a notebook or a test without a page)."""
    ctx = get_script_run_ctx(suppress_warning=True)
    return ctx.session_id if ctx is not None else None


def _connected(session_id: str) -> bool | None:
    """Whether a session's browser is connected (None where no Streamlit server runs: nobody to ask)."""
    return Runtime.instance().is_active_session(session_id) if Runtime.exists() else None


@dataclass
class Job:
    """One background run: how far it is (``done`` of ``total`` in its current ``phase``), and how it ended
    (``error`` is a message for the page; ``result`` what the work returned)."""

    total: int
    kind: str = "corpus"
    done: int = 0
    phase: str = ""
    started: float = field(default_factory=time.perf_counter)
    queued: bool = False
    finished: bool = False
    cancelled: bool = False
    error: str = ""
    result: Any = None
    path: Path | None = None
    let_go: bool = False  # stopped because nobody who asked for it was connected any more (LET_GO)
    stop: threading.Event = field(default_factory=threading.Event, repr=False)
    thread: threading.Thread | None = field(default=None, repr=False)
    sessions: set[str] = field(default_factory=set, repr=False)  # who started it or looked at it
    _seen: float = field(default_factory=time.monotonic, repr=False)  # when one of them was last connected
    _checked: float = field(default=0.0, repr=False)
    _change: threading.Condition = field(default_factory=threading.Condition, repr=False)

    @property
    def running(self) -> bool:
        return not self.finished

    def report(self, done: int, total: int, phase: str | None = None) -> None:
        """Progress from the work: ``done`` of ``total`` (in ``phase``, when it changes). A run nobody watches any
        more is stopped here (the work sees ``stop`` at its next check)."""
        with self._change:
            self.done, self.total = done, total
            if phase is not None:
                self.phase = phase
            self._change.notify_all()
        self.check_watched()

    def note_session(self) -> None:
        """Note the session whose script asks for this run (a page that started it, shows it or waits on it)."""
        session = _session_id()
        if session is not None:
            with _guard:
                self.sessions.add(session)

    def check_watched(self, force: bool = False) -> bool:
        """Whether someone still watches this run; a run of a LET_GO kind whose sessions have all been gone for
        :func:`let_go_after` seconds is stopped (``let_go``). Asks at most every CHECK_EVERY_S unless ``force``."""
        now = time.monotonic()
        if self.kind not in LET_GO or self.stop.is_set() or (not force and now - self._checked < CHECK_EVERY_S):
            return not self.let_go
        self._checked = now
        with _guard:
            sessions = list(self.sessions)
        if not sessions or any(_connected(s) is not False for s in sessions):
            self._seen = now
        elif now - self._seen >= let_go_after():
            self.let_go = True
            self.stop.set()
        return not self.let_go

    def wait_for(self, ready: Callable[[], bool], timeout: float) -> bool:
        """Wait up to ``timeout`` seconds, woken by every report, until ``ready()`` or the run is over; returns
        ``ready()``. A page waiting for a layer reruns as soon as it is read, not at its next tick."""
        end = time.monotonic() + timeout
        with self._change:
            while not ready() and not self.finished and (left := end - time.monotonic()) > 0:
                self._change.wait(left)
        return ready()

    def _finish(self) -> None:
        with self._change:
            self.finished = True
            self._change.notify_all()

    @property
    def ahead(self) -> int:
        """Runs of the same kind that hold a place while this one waits for it (0 once it runs)."""
        return _ahead(self) if self.queued else 0


_jobs: dict[Hashable, Job] = {}
_guard = threading.Lock()
_places: dict[str, threading.Semaphore] = {}
_waiting: list[Job] = []


def places(kind: str, environ=os.environ) -> int:
    """How many runs of ``kind`` run at once (``ATTENTION_LAB_<KIND>_JOBS``; 0: any number)."""
    text = environ.get(f"ATTENTION_LAB_{kind.upper()}_JOBS", "")
    return int(text) if text.isdigit() else PLACES.get(kind, 0)


def _ahead(job: Job) -> int:
    with _guard:
        running = sum(1 for j in _jobs.values() if j.kind == job.kind and j.running and not j.queued)
        before = _waiting.index(job) if job in _waiting else 0
    return running + before


def any_running() -> bool:
    """Whether any background run works or waits for its place now."""
    with _guard:
        return any(job.running for job in _jobs.values())


def job_for(key: Hashable) -> Job | None:
    """The run under ``key`` (None: none yet); the asking page's session is noted as one that watches it."""
    with _guard:
        job = _jobs.get(key)
    if job is not None:
        job.note_session()
    return job


def plain_error(exc: Exception) -> str:
    """What a failed job says on the page: a full disk in plain words, any other error of the file system without
    the server's paths, others as they are."""
    if isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EDQUOT):
        return (
            "The server's disk is full, so the result could not be written (whatever was kept before is unchanged). "
            "Ask whoever runs the server to free some space, then try again."
        )
    if isinstance(exc, OSError):
        return f"The server could not write or read a file ({exc.strerror or 'error ' + str(exc.errno)}); try again."
    return f"{type(exc).__name__}: {exc}"


def run(key: Hashable, kind: str, total: int, work: Callable[[Job], Any], name: str = "") -> Job:
    """Start ``work(job)`` in the background unless a run under ``key`` is going (that one is returned). The work
    reports through ``job.report``, checks ``job.stop`` and returns the result; raising Cancelled (model.long) or
    CancelledError (model.profile) ends it as cancelled, any other error as a message."""
    session = _session_id()
    with _guard:
        job = _jobs.get(key)
        if job is not None and job.running:
            if session is not None:
                job.sessions.add(session)
            return job
        job = _jobs[key] = Job(total=total, kind=kind, sessions={session} if session else set())
        limit = places(kind)
        gate = _places.setdefault(kind, threading.Semaphore(limit)) if limit else None
        if gate is not None:
            job.queued = True
            _waiting.append(job)

    def body() -> None:
        try:
            if gate is not None:
                gate.acquire()
            with _guard:
                job.queued = False
                if job in _waiting:
                    _waiting.remove(job)
            if job.stop.is_set() or not job.check_watched(force=True):  # everyone who asked left while it waited
                raise Cancelled
            job.result = work(job)
        except (Cancelled, CancelledError):
            job.cancelled = True
        except Exception as exc:  # shown on the page; the app keeps working
            job.error = plain_error(exc)
        finally:
            if gate is not None:
                gate.release()
            job._finish()

    job.thread = threading.Thread(target=body, name=f"{kind}-{name or id(job)}", daemon=True)
    job.thread.start()
    return job


@atexit.register
def stop_all(timeout: float = 30.0) -> None:
    """Cancel every running job and wait for it (at exit: a thread still inside torch when the interpreter goes
    away aborts the process)."""
    with _guard:
        running = [j for j in _jobs.values() if j.running]
    for job in running:
        job.stop.set()
    for job in running:
        if job.thread is not None:
            job.thread.join(timeout)


def profiles_root() -> Path:
    """Where corpus profiles are stored (``ATTENTION_LAB_PROFILES``, default ``./profiles``)."""
    return Path(os.environ.get("ATTENTION_LAB_PROFILES", ROOT / "profiles"))


def profile_path(spec: ModelSpec, loaded: LoadedModel, key: str) -> Path:
    """Where the profile of corpus ``key`` (:func:`model.profile.corpus.corpus_hash`) on this model lives."""
    return profile_dir(profiles_root(), model_key(loaded, spec), key)


def corpus_job(spec: ModelSpec, device: str, key: str) -> Job | None:
    return job_for(("corpus", spec, device, key))


def start_corpus(
    spec: ModelSpec, device: str, loaded: LoadedModel, docs: list[str], name: str, max_len: int, ids=None
) -> Job:
    """Profile a corpus unless a run of the same model, device and corpus is going (then that one is returned).
    ids: the documents' own names (a .jsonl "id" field) or None."""
    key = corpus_hash(docs, max_len, ids)

    def work(job: Job) -> None:
        profile = run_profile(
            spec, docs, profiles_root(), ids=ids, loaded=loaded, corpus_name=name, max_len=max_len, device=device,
            progress=lambda done, total: job.report(done, total), cancel=job.stop.is_set, reuse=False,
        )  # fmt: skip
        job.path = profile.path

    return run(("corpus", spec, device, key), "corpus", len(docs), work, name=key)
