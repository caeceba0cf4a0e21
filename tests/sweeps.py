"""Sweeps on the real models computed once per test run, for every pytest-xdist worker (installed by
tests/conftest.py).

The same sweep is asked for in three test files on three workers: activation patching and path patching on SmolLM2
and the indirect-object prompt in the Causes page's AppTest, the export layout sweep and the research notebook's
examples — about 100 core-seconds of a CI run computed twice or three times over. In one process the product already
computes such a sweep once per model and inputs (model/analysis/memo.py); here that memo's ``make`` first looks in a
folder the workers share, keyed by everything the result depends on: the model's configuration and every weight's
bytes, and the memo's key (the prompts' ids, the metric, the kinds or receivers). The first worker to need a sweep
computes it while any other that needs it waits on a lock, then writes it; the others read it. The circuit card's
sums over the vocabulary (its effective embedding reads every token through block 0) and a source's needle runs are
shared the same way. Only sweeps on models of at least MIN_PARAMS parameters are shared (the tests' small models
compute theirs in a fraction of a second and some count what a sweep runs), never while a hook is attached (memo.py
computes those every time)."""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import weakref
from pathlib import Path

import numpy as np
import torch

from model.analysis import circuits, memo, paths
from model.analysis import patching as patching_module
from model.analysis.needle import NeedleGrid, NeedleRun
from model.analysis.patching import Metric, Patching
from viz.views import source

SHARED = ("activation_patching", "path_patching")  # memo keys whose results are a Patching
MIN_PARAMS = 50_000_000
_prints: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def fingerprint(model: torch.nn.Module) -> str:
    """A digest of the model's configuration and every parameter's and buffer's name, dtype, shape and bytes
    (kept per model while its weights are unchanged: SmolLM2's 540 MB take about a second)."""
    version = memo._version(model)
    kept = _prints.get(model)
    if kept is not None and kept[0] == version:
        return kept[1]
    digest = hashlib.blake2b(repr(getattr(model, "cfg", None)).encode(), digest_size=20)
    for name, t in model.state_dict().items():
        t = t.detach().cpu().contiguous()
        digest.update(f"{name} {t.dtype} {tuple(t.shape)}".encode())
        digest.update(t.view(-1).view(torch.uint8).numpy())  # (bytes,): any dtype, bfloat16 included
    _prints[model] = (version, digest.hexdigest())
    return _prints[model][1]


def _tokens(value):
    return list(value) if isinstance(value, tuple) else value


def _savez(path: Path, **arrays) -> None:
    """Write ``arrays`` to ``path`` at once: a worker reading it never sees half a file."""
    tmp = path.with_suffix(".tmp.npz")
    np.savez(tmp, **arrays)
    os.replace(tmp, path)


def _write(value: Patching, path: Path) -> None:
    meta = {
        "clean": value.clean,
        "corrupted": value.corrupted,
        "metric": [_tokens(value.metric.answer), _tokens(value.metric.foil), value.metric.position],
    }
    _savez(path, meta=np.array(json.dumps(meta)), **{f"raw.{k}": v for k, v in value.raw.items()})


def _read(path: Path) -> Patching:
    with np.load(path, allow_pickle=False) as data:
        meta = json.loads(str(data["meta"]))
        raw = {k[4:]: data[k] for k in data.files if k.startswith("raw.")}
    answer, foil, position = (tuple(v) if isinstance(v, list) else v for v in meta["metric"])
    return Patching(Metric(answer, foil, position), meta["clean"], meta["corrupted"], raw)


def _shared(folder: Path, model, key, make, write, read):
    """``make()``, or what the first worker to make it for this model and ``key`` wrote (``write(value, path)``
    where ``read(path)`` reads it back), waiting while another worker makes it."""
    name = hashlib.sha256(repr((fingerprint(model), key)).encode()).hexdigest()[:32]
    path = folder / f"{name}.npz"
    with open(folder / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        if path.exists():
            return read(path)
        version = memo._version(model)
        value = make()
        if memo._version(model) == version and not memo._hooked(model):
            write(value, path)
        return value


def _own(model) -> bool:
    """Whether a model computes its own (small, or hooked: see the module)."""
    return memo._hooked(model) or sum(p.numel() for p in model.parameters()) < MIN_PARAMS


def _write_tensors(value: dict[str, torch.Tensor], path: Path) -> None:
    _savez(path, **{k: v.numpy() for k, v in value.items()})


def _read_tensors(path: Path) -> dict[str, torch.Tensor]:
    with np.load(path, allow_pickle=False) as data:
        return {k: torch.from_numpy(data[k]) for k in data.files}


NEEDLE_ARRAYS = ("retrieval", "needle_share", "sink_share", "sink_rows")


def _write_needles(grid: NeedleGrid, path: Path) -> None:
    runs = [
        {"length": r.length, "depth": r.depth, "needle": r.needle, "generated": r.generated, "recall": r.recall}
        for r in grid.runs
    ]
    meta = {"lengths": grid.lengths, "depths": grid.depths, "runs": runs}
    arrays = {f"{i}.{name}": getattr(r, name) for i, r in enumerate(grid.runs) for name in NEEDLE_ARRAYS}
    _savez(path, meta=np.array(json.dumps(meta)), **arrays)


def _read_needles(path: Path) -> NeedleGrid:
    with np.load(path, allow_pickle=False) as data:
        meta = json.loads(str(data["meta"]))
        runs = tuple(
            NeedleRun(
                r["length"],
                r["depth"],
                tuple(r["needle"]),
                tuple(r["generated"]),
                r["recall"],
                *(data[f"{i}.{name}"] for name in NEEDLE_ARRAYS),
            )
            for i, r in enumerate(meta["runs"])
        )
    return NeedleGrid(runs, tuple(meta["lengths"]), tuple(meta["depths"]))


def install(folder: Path) -> None:
    """Route the product's patching and path patching memo, and the circuit card's sums over the vocabulary (the
    effective embedding: 49,152 tokens through SmolLM2's block 0, 13.6 s) and a source's needle runs (SmolLM2's four
    short haystacks, 13 s, in the export and slide layout sweeps) through ``folder`` (see the module)."""
    real, vocabulary = memo.once, circuits._vocabulary

    def once(model, key, make):
        if key[0] not in SHARED or _own(model):
            return real(model, key, make)
        return real(model, key, lambda: _shared(folder, model, key, make, _write, _read))

    def shared_vocabulary(model, embedding: str) -> dict[str, torch.Tensor]:
        kept = circuits._round_trips.setdefault(model, {})
        if embedding not in kept and not _own(model):
            key = ("vocabulary", embedding)
            make = lambda: vocabulary(model, embedding)  # noqa: E731
            kept[embedding] = _shared(folder, model, key, make, _write_tensors, _read_tensors)
        return vocabulary(model, embedding)

    def shared_needles(model, tokenizer, filler, lengths, depths, progress=None, cancel=None) -> NeedleGrid:
        if _own(model) or progress is not None or cancel is not None:
            return needles(model, tokenizer, filler, lengths, depths, progress, cancel)
        text = hashlib.sha256(f"{tokenizer.inner.to_str()}\n{filler}".encode()).hexdigest()
        key = ("needle_grid", text, tuple(lengths), tuple(depths))
        make = lambda: needles(model, tokenizer, filler, lengths, depths)  # noqa: E731
        return _shared(folder, model, key, make, _write_needles, _read_needles)

    patching_module.once = paths.once = once
    circuits._vocabulary = shared_vocabulary
    needles, source.needle_grid = source.needle_grid, shared_needles
