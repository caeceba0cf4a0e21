"""One small file per training run (safetensors: nothing in it is executed): the spec, the per-step loss, every
snapshot (scores and the probe's patterns in float16), the probe batch and the finished weights, written
atomically (a temporary file renamed into place), so a cancelled or crashed run never leaves half a file."""

from __future__ import annotations

import contextlib
import copy
import json
import os
import tempfile
import time
from dataclasses import asdict
from pathlib import Path

import torch
from safetensors.torch import save

from model.learn.loop import Run, Snapshot, TrainSpec, build
from model.learn.tasks import Batch

FORMAT = "attention-lab-training-run/1"
LIVE = ".live"  # <key>.live.safetensors: a run still training, rewritten as it goes (viz/shell/training.py)
STOPPED = ".stopped"  # <key>.stopped.safetensors: a run stopped before its end (a crash, nobody watching): resumable
ROOT = Path(__file__).resolve().parents[2]


def runs_root() -> Path:
    """Where finished runs are kept (``ATTENTION_LAB_RUNS``, default ``./runs``)."""
    return Path(os.environ.get("ATTENTION_LAB_RUNS", ROOT / "runs"))


def tokenizer_of(spec: TrainSpec):
    """The tokenizer a run's model reads text with: the letters' (word level) or the bundled one (masked words)."""
    from model.learn.tasks import TASKS, corpus_stream, letter_tokenizer

    return letter_tokenizer() if TASKS[spec.task].causal else corpus_stream()[1]


def _n(count: int, word: str) -> str:
    return f"{count} {word}{'' if count == 1 else 's'}"


def describe(spec: TrainSpec) -> str:
    """A run's model in words: 'induction, 2 layers × 4 heads, d_model 64, learned positions, attention-only'."""
    body = "attention-only" if not spec.feed_forward else "with feed-forward"
    return (
        f"{spec.task}, {_n(spec.n_layers, 'layer')} × {_n(spec.n_heads, 'head')}, d_model {spec.d_model}, "
        f"{spec.positional} positions, {body}, {spec.norm}-norm, {spec.steps:,} steps, seed {spec.seed}"
    )


def loaded_model(run: Run, stack: str = "decoder", source: str = ""):
    """The run's model as the other pages open it (a copy: the page's run keeps its own), named by its spec. An
    encoder–decoder opens one stack: ``"encoder"`` (self-attention over the source) or ``"decoder"`` (causal
    self-attention over the target, with its cross-attention reading ``source``: default the probe's); the
    decoder's ``info["source_tokens"]`` are the source's tokens, the keys of its cross-attention."""
    from model.io.families.encdec import open_stack
    from model.io.state import LoadedModel
    from model.learn.tasks import TASKS

    tok = tokenizer_of(run.spec)
    info = {"name": f"Trained here: {describe(run.spec)}", "source": f"Watch it learn, run {run.spec.key}",
            "steps": run.step}  # fmt: skip
    if not TASKS[run.spec.task].seq2seq:
        return LoadedModel(copy.deepcopy(run.model).eval(), tok, info)
    pair = LoadedModel(run.model, tok, info)  # the imported T5s and BARTs open their stacks the same way
    return open_stack(pair, stack, source.strip() or probe_texts(run)[0])


def probe_texts(run: Run) -> tuple[str, str]:
    """An encoder–decoder's first probe pair as text: (the source it reads, the whole target it writes)."""
    tok = tokenizer_of(run.spec)
    ids = [*run.probe.ids[0].tolist(), int(run.probe.labels[0, -1])]  # the decoder's input and its last label

    def text(seq: list[int]) -> str:
        return "".join(tok.id_to_token(i) for i in seq if i not in tok.special_ids())

    source = run.probe.source
    return (text(source[0].tolist()) if source is not None else "", text(ids))


def stored_runs(folder: str | Path | None = None) -> list[str]:
    """Keys of the finished runs kept in ``folder`` (default :func:`runs_root`), newest first."""
    folder = Path(folder) if folder is not None else runs_root()
    if not folder.is_dir():
        return []
    files = sorted(folder.glob("*.safetensors"), key=lambda f: f.stat().st_mtime, reverse=True)
    keys = [f.stem for f in files if not f.name.startswith(".") and len(f.stem) == 12]
    return [k for k in keys if spec_of(k, folder) is not None]


def to_bytes(run: Run, state: bool = False) -> bytes:
    """The run as safetensors bytes (what the page offers to download and what :func:`write` stores); ``state``:
    with what it needs to go on training (the optimizer's moments, the batches' generator), when it is training."""
    snaps = run.view()
    if not snaps:
        raise ValueError("the run has no snapshot yet")
    tensors = {
        "losses": torch.tensor(run.losses, dtype=torch.float32),  # (S,) training loss per step
        "steps": torch.tensor([s.step for s in snaps], dtype=torch.int64),  # (K,)
        "loss": torch.tensor([s.loss for s in snaps], dtype=torch.float32),  # (K,) on the probe batch
        "accuracy": torch.tensor([s.accuracy for s in snaps], dtype=torch.float32),  # (K,)
        "seconds": torch.tensor([s.seconds for s in snaps], dtype=torch.float64),  # (K,) training time taken
        "patterns": torch.stack([s.patterns for s in snaps]),  # (K, L, H, N, N) float16
        "probe.ids": run.probe.ids.contiguous(),
        "probe.labels": run.probe.labels.contiguous(),
        "probe.target": run.probe.target.contiguous(),
    }
    for name in ("source", "special"):  # an encoder–decoder's source; the special tokens
        value = getattr(run.probe, name)
        if value is not None:
            tensors[f"probe.{name}"] = value.contiguous()
    for name in snaps[0].scores:
        tensors[f"scores.{name}"] = torch.stack([s.scores[name] for s in snaps]).float()  # (K, L, H)
    for name, value in run.model.state_dict().items():
        tensors[f"weights.{name}"] = value.detach().contiguous()
    meta = {
        "format": FORMAT,
        "spec": json.dumps(asdict(run.spec)),
        "seconds": repr(run.seconds),
        "snapshot_seconds": repr(run.snapshot_seconds),
        "stride": str(run.stride),
    }
    if state and run.opt is not None and run.gen is not None:
        tensors["losses"] = torch.tensor(run.losses, dtype=torch.float64)  # exact: the run goes on from them
        tensors["gen"] = run.gen.get_state()  # (5056,) uint8: the batches' generator
        for i, moments in run.opt.state_dict()["state"].items():
            for name, value in moments.items():
                tensors[f"opt.{i}.{name}"] = value.detach().contiguous()  # AdamW's step, exp_avg, exp_avg_sq
    return save(tensors, metadata=meta)


def from_bytes(data: bytes) -> Run:
    """A run read back from :func:`to_bytes` (the model rebuilt from its spec, the weights loaded)."""
    from model.io.state import read_safetensors

    tensors, meta = read_safetensors(data)  # validated before any tensor is made
    if meta.get("format") != FORMAT:
        raise ValueError("not an Attention Lab training run (its metadata names no run format)")
    spec = TrainSpec(**json.loads(meta["spec"]))
    model, _ = build(spec)
    weights = {k.removeprefix("weights."): v for k, v in tensors.items() if k.startswith("weights.")}
    model.load_state_dict(weights)
    model.eval()
    probe = Batch(tensors["probe.ids"], tensors["probe.labels"], tensors["probe.target"], tensors.get("probe.source"),
                  tensors.get("probe.special"))  # fmt: skip
    run = Run(spec, model, probe, losses=tensors["losses"].tolist())
    names = [k.removeprefix("scores.") for k in tensors if k.startswith("scores.")]
    for i, step in enumerate(tensors["steps"].tolist()):
        scores = {n: tensors[f"scores.{n}"][i] for n in names}
        loss, acc = float(tensors["loss"][i]), float(tensors["accuracy"][i])
        seconds = float(tensors["seconds"][i]) if "seconds" in tensors else 0.0
        run.snapshots.append(Snapshot(step, loss, acc, scores, tensors["patterns"][i], seconds))
    run.seconds = float(meta.get("seconds", 0.0))
    run.snapshot_seconds = float(meta.get("snapshot_seconds", 0.0))
    run.stride = max(1, int(meta.get("stride", "1")))
    if "gen" in tensors:  # written while it trained: what train() needs to go on exactly
        moments: dict[int, dict] = {}
        for name, value in tensors.items():
            if name.startswith("opt."):
                _, index, part = name.split(".", 2)
                moments.setdefault(int(index), {})[part] = value
        run.resume = {"gen": tensors["gen"], "opt": {"state": moments, "param_groups": _groups(run)}}
    return run


def _groups(run: Run) -> list[dict]:
    """The optimizer's parameter groups as train() makes them (from the spec: nothing of them is stored)."""
    spec = run.spec
    opt = torch.optim.AdamW(run.model.parameters(), lr=spec.lr, betas=(0.9, 0.98), weight_decay=0.01)
    return opt.state_dict()["param_groups"]


def spec_of(key: str, folder: str | Path | None = None) -> TrainSpec | None:
    """The spec of the stored run ``key``, read from the file's metadata only (None when unreadable)."""
    from safetensors import safe_open

    path = (Path(folder) if folder is not None else runs_root()) / f"{key}.safetensors"
    try:
        with safe_open(str(path), "pt") as handle:
            meta = handle.metadata() or {}
        return TrainSpec(**json.loads(meta["spec"])) if meta.get("format") == FORMAT else None
    except (OSError, ValueError, KeyError, TypeError):
        return None


def write(run: Run, folder: str | Path, live: bool = False, suffix: str = "") -> Path:
    """Store the run as ``folder/<spec key>.safetensors``, atomically; ``live``: as ``<key>.live.safetensors``, the
    run so far while it trains, which replicas sharing the folder read, with its training state so that it can be
    resumed after a crash; ``suffix`` (STOPPED): a run stopped before its end, resumable."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{run.spec.key}{LIVE if live else suffix}.safetensors"
    handle, tmp = tempfile.mkstemp(dir=folder, prefix=".partial-", suffix=".safetensors")
    try:
        with os.fdopen(handle, "wb") as f:
            f.write(to_bytes(run, state=live or bool(suffix)))
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def read(folder: str | Path | None, key: str) -> Run | None:
    """The stored run named ``key`` (12 hex digits), or None."""
    path = _path(folder, key)
    return from_bytes(path.read_bytes()) if path is not None and path.is_file() else None


def live_file_of(folder: str | Path | None, key: str) -> Path | None:
    """Where run ``key``'s live file is (written or not); None for a key that is not a run's."""
    return _path(folder, key, LIVE)


def live_path(folder: str | Path | None, key: str, max_age: float) -> Path | None:
    """The live file of run ``key`` when one was written or touched in the last ``max_age`` seconds (an older one
    belongs to a server that stopped), else None."""
    path = live_file_of(folder, key)
    try:
        return path if path is not None and time.time() - path.stat().st_mtime <= max_age else None
    except OSError:
        return None


def _path(folder: str | Path | None, key: str, suffix: str = "") -> Path | None:
    if len(key) != 12 or any(c not in "0123456789abcdef" for c in key):
        return None  # a key from a link is never a path
    return (Path(folder) if folder is not None else runs_root()) / f"{key}{suffix}.safetensors"


def stopped_file_of(folder: str | Path | None, key: str) -> Path | None:
    """Where run ``key`` is kept when it stopped before its end (None for a key that is not a run's)."""
    return _path(folder, key, STOPPED)


def recover(folder: str | Path | None, stale: float) -> list[str]:
    """After a restart: a live file nobody has written for ``stale`` seconds belonged to a server that stopped — kept
    as a stopped run when it can go on (it holds its training state), else removed — and half-written files are
    removed. Returns the keys of the runs kept."""
    root = Path(folder) if folder is not None else runs_root()
    kept, now = [], time.time()
    if not root.is_dir():
        return kept
    for path in root.glob(f"*{LIVE}.safetensors"):
        key = path.name.removesuffix(f"{LIVE}.safetensors")
        try:
            if now - path.stat().st_mtime <= stale:
                continue  # still being written: a run training here or on another replica
            run = from_bytes(path.read_bytes())
            if run.resume is None:
                raise ValueError("no training state")
            os.replace(path, root / f"{key}{STOPPED}.safetensors")
            kept.append(key)
        except (OSError, ValueError, KeyError, TypeError, RuntimeError):
            path.unlink(missing_ok=True)
    for path in root.glob(".partial-*.safetensors"):
        with contextlib.suppress(OSError):
            if now - path.stat().st_mtime > stale:
                path.unlink()
    return kept
