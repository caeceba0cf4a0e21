"""Runs waiting for a training place, kept across a restart: one small JSON file per queued run
(``<key>.queued.json`` in the runs folder: the spec and when it was asked for), written when the run is queued and
removed when it starts or is cancelled. After a restart the server claims each file (a rename only one replica of
a shared folder wins) and queues the runs again in the order they were asked for (viz/shell/training.py)."""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
import time
import uuid
from dataclasses import asdict
from pathlib import Path

from model.io.budget import parse_json
from model.learn.loop import TrainSpec

QUEUED = ".queued.json"
FORMAT = "attention-lab-queued-run/1"
MAX_BYTES = 16_384  # a spec is ≈ 300 bytes


def _path(folder: str | Path, key: str) -> Path | None:
    if len(key) != 12 or any(c not in "0123456789abcdef" for c in key):
        return None  # a key from a link is never a path
    return Path(folder) / f"{key}{QUEUED}"


def mark_queued(folder: str | Path, spec: TrainSpec) -> Path | None:
    """Note that ``spec``'s run waits for a place (atomically; None when the disk refuses: the run still queues)."""
    path = _path(folder, spec.key)
    if path is None:
        return None
    body = json.dumps({"format": FORMAT, "spec": asdict(spec), "at": time.time()}).encode()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        handle, tmp = tempfile.mkstemp(dir=path.parent, prefix=".partial-", suffix=QUEUED)
        try:
            with os.fdopen(handle, "wb") as f:
                f.write(body)
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
    except OSError:
        return None
    return path


def unmark(folder: str | Path, key: str) -> None:
    """The run ``key`` started or was cancelled: it no longer waits."""
    path = _path(folder, key)
    if path is not None:
        with contextlib.suppress(OSError):
            path.unlink(missing_ok=True)


def claim_queued(folder: str | Path) -> list[TrainSpec]:
    """After a restart: the specs of the runs that were waiting, oldest first, each file claimed (renamed away, so
    that a replica sharing the folder does not queue it too) and removed; unreadable ones are removed."""
    root = Path(folder)
    if not root.is_dir():
        return []
    found = []
    for path in root.glob(f"*{QUEUED}"):
        if path.name.startswith(".partial-"):
            continue
        mine = path.with_name(f".claimed-{uuid.uuid4().hex[:8]}-{path.name}")
        try:
            os.replace(path, mine)  # only one claimant's rename finds the file
        except OSError:
            continue
        try:
            if mine.stat().st_size > MAX_BYTES:
                raise ValueError("too large")
            meta = parse_json(mine.read_bytes(), path.name)
            if not isinstance(meta, dict) or meta.get("format") != FORMAT or not isinstance(meta.get("spec"), dict):
                raise ValueError("not a queued run")
            found.append((float(meta.get("at", 0.0)), TrainSpec(**meta["spec"])))
        except (OSError, ValueError, TypeError):
            pass
        finally:
            mine.unlink(missing_ok=True)
    return [spec for _, spec in sorted(found, key=lambda pair: pair[0])]
