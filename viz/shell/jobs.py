"""Corpus runs in the background: one thread per (model, device, corpus), shared by every session, with progress
and a cancel switch. Other students' requests are served while it runs (captures on a shared model run side
by side: model/capture.py). Profiles are written under ATTENTION_LAB_PROFILES (default: ./profiles)."""

from __future__ import annotations

import os
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from model.io.catalog import ModelSpec
from model.io.state import LoadedModel
from model.profile.corpus import corpus_hash
from model.profile.job import CancelledError
from model.profile.run import model_key, run_profile
from model.profile.store import profile_dir

ROOT = Path(__file__).resolve().parents[2]


def profiles_root() -> Path:
    """Where corpus profiles are stored (``ATTENTION_LAB_PROFILES``, default ``./profiles``)."""
    return Path(os.environ.get("ATTENTION_LAB_PROFILES", ROOT / "profiles"))


@dataclass
class Job:
    """One corpus run: how far it is, and how it ended (``error`` is a message for the page)."""

    total: int
    done: int = 0
    started: float = field(default_factory=time.perf_counter)
    finished: bool = False
    cancelled: bool = False
    error: str = ""
    path: Path | None = None
    stop: threading.Event = field(default_factory=threading.Event, repr=False)

    @property
    def running(self) -> bool:
        return not self.finished


_jobs: dict[tuple, Job] = {}
_guard = threading.Lock()


def profile_path(spec: ModelSpec, loaded: LoadedModel, key: str) -> Path:
    """Where the profile of corpus ``key`` (:func:`model.profile.corpus.corpus_hash`) on this model lives."""
    return profile_dir(profiles_root(), model_key(loaded, spec), key)


def job_for(spec: ModelSpec, device: str, key: str) -> Job | None:
    with _guard:
        return _jobs.get((spec, device, key))


def start(spec: ModelSpec, device: str, loaded: LoadedModel, docs: list[str], name: str, max_len: int, ids=None) -> Job:
    """Start a run unless one for the same model, device and corpus is already going (then that one is returned).
    ids: the documents' own names (a .jsonl "id" field) or None."""
    key = (spec, device, corpus_hash(docs, max_len, ids))
    with _guard:
        job = _jobs.get(key)
        if job is not None and job.running:
            return job
        job = _jobs[key] = Job(total=len(docs))

    def progress(done: int, total: int) -> None:
        job.done = done

    def work() -> None:
        try:
            profile = run_profile(
                spec, docs, profiles_root(), ids=ids, loaded=loaded, corpus_name=name, max_len=max_len, device=device,
                progress=progress, cancel=job.stop.is_set, reuse=False,
            )  # fmt: skip
            job.path = profile.path
        except CancelledError:
            job.cancelled = True
        except Exception as exc:  # shown on the page; the app keeps working
            job.error = f"{type(exc).__name__}: {exc}"
        finally:
            job.finished = True

    threading.Thread(target=work, name=f"corpus-{key[2]}", daemon=True).start()
    return job
