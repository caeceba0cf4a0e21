"""Run a corpus profile and save it: the one entry point of the CLI and the dashboard, either engine."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from model.io.catalog import SOURCES, ModelSpec, load
from model.io.state import LoadedModel
from model.io.tokenizer import MAX_TEXT_CHARS
from model.profile.corpus import corpus_hash
from model.profile.job import BATCH_SIZE, MAX_LEN, profile_corpus
from model.profile.store import Profile, profile_dir, read_profile, write_profile

if TYPE_CHECKING:  # pandas costs 0.33 s to import: not before a cold server's first chart
    import pandas as pd

ENGINES = ("local", "ray")


def spec_from_arg(value: str) -> ModelSpec:
    """ "minilm", "bundled", "smollm2", … or a checkpoint file/folder path."""
    return (
        ModelSpec(value) if value in SOURCES and value not in ("upload", "folder") else ModelSpec("folder", path=value)
    )


def model_key(loaded: LoadedModel, spec: ModelSpec) -> str:
    """The model part of a profile's folder name: its name, plus the path for a local file or folder."""
    return f"{loaded.name}-{Path(spec.path).name}" if spec.kind == "folder" else loaded.name


def documents_table(loaded: LoadedModel, docs: list[str], max_len: int, ids: list[str] | None = None) -> pd.DataFrame:
    """doc (index), id (the file's own name for it, "" where none), text (as far as the tokenizer reads it: the
    first MAX_TEXT_CHARS characters), n_tokens (after the cut)."""
    limit = min(max_len, loaded.model.cfg.max_seq_len)
    n = [len(loaded.tokenizer.encode(d, max_len=limit)) for d in docs]
    names = list(ids) if ids is not None else [""] * len(docs)
    import pandas as pd

    # the text kept is what the tokenizer reads (a 10 MB one-line corpus keeps its first 200,000 characters)
    kept = [d[:MAX_TEXT_CHARS] for d in docs]
    frame = pd.DataFrame({"doc": range(len(docs)), "id": names, "text": kept, "n_tokens": n})
    return frame.astype({"doc": "int32"})


def run_profile(
    spec: ModelSpec,
    docs: list[str],
    out: str | Path,
    *,
    ids: list[str] | None = None,
    loaded: LoadedModel | None = None,
    corpus_name: str = "",
    max_len: int = MAX_LEN,
    batch_size: int = BATCH_SIZE,
    device: str = "cpu",
    engine: str = "local",
    address: str | None = None,
    workers: int = 1,
    progress: Callable[[int, int], None] | None = None,
    cancel: Callable[[], bool] | None = None,
    reuse: bool = True,
) -> Profile:
    """Profile ``docs`` (named by ``ids`` where the file names them) on the model of ``spec`` (``loaded`` when
    the caller has it) and save it under ``out``; with ``reuse`` an existing complete profile of the same model
    and corpus is returned as it is."""
    if engine not in ENGINES:
        raise ValueError(f"engine must be one of {ENGINES}")
    loaded = loaded or load(spec)
    key = corpus_hash(docs, max_len, ids)
    path = profile_dir(out, model_key(loaded, spec), key)
    if reuse and (found := read_profile(path)) is not None:
        return found
    start = time.perf_counter()
    if engine == "ray":
        from model.profile.ray_engine import profile_with_ray

        heads = profile_with_ray(spec, docs, max_len=max_len, batch_size=batch_size, address=address, workers=workers)
    else:
        heads = profile_corpus(
            loaded.model, loaded.tokenizer, docs, max_len=max_len, batch_size=batch_size, device=device,
            progress=progress, cancel=cancel,
        )  # fmt: skip
    meta = {
        "model": loaded.name,
        "corpus": corpus_name,
        "corpus_hash": key,
        "documents": len(docs),
        "max_len": max_len,
        "batch_size": batch_size,
        "engine": engine,
        "device": device,
        "seconds": round(time.perf_counter() - start, 2),
        "layers": loaded.model.cfg.n_layers,
        "heads": loaded.model.cfg.n_heads,
    }
    write_profile(path, heads, documents_table(loaded, docs, max_len, ids), meta)
    return read_profile(path)
