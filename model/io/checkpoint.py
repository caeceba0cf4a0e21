"""Save and load Attention Lab checkpoints.

Native format: one safetensors file whose metadata holds the config (JSON), the tokenizer (its
tokenizer.json text) and free-form info, so one file restores model + tokenizer. A folder with
``model.safetensors`` + ``config.json`` (+ ``tokenizer.json``) works too, and Hugging Face BERT folders
are recognised and imported (see :mod:`model.io.bert`).

The post's encoder, saved as its readers save it (``torch.save(model.state_dict(), ...)`` or
``safetensors.torch.save_file(model.state_dict(), ...)``), is recognised by its parameter names and imported
(see :mod:`model.io.post`); it does not store its number of heads, so ``n_heads`` says it (or a config.json /
metadata hint beside it).

Plain PyTorch files (``.pt``/``.pth``) go through ``torch.load(weights_only=True)`` only: nothing in a
checkpoint is ever unpickled into arbitrary objects or executed.
"""

from __future__ import annotations

import json
import tempfile
from dataclasses import replace
from pathlib import Path

import torch
from safetensors.torch import save as st_save

from model.errors import CheckpointError, foreign_module
from model.io.archive import unpacked
from model.io.budget import load_json_file
from model.io.contents import FORMAT, Contents, Questions, file_kind, questions, read_contents, unrecognised
from model.io.families import load_hf_folder
from model.io.formats import foreign_folder
from model.io.gguf import load_gguf
from model.io.post import load_post_state
from model.io.post_layout import is_post_state
from model.io.state import LoadedModel, build_from_state, config_from_dict, config_from_json
from model.io.tokenizer import Tokenizer
from model.io.tokenizer_files import LOOKED_FOR, WITHOUT_GGUF, folder_tokenizer
from model.transformer import Transformer

__all__ = [
    "FORMAT",
    "Questions",
    "load_bytes",
    "load_checkpoint",
    "questions",
    "questions_at",
    "save_checkpoint",
    "upload_questions",
]


def save_checkpoint(
    path: str | Path,
    model: Transformer,
    tokenizer: Tokenizer | None = None,
    info: dict | None = None,
    dtype: torch.dtype | None = None,
    tensors: dict[str, torch.Tensor] | None = None,
) -> Path:
    """Write weights (floating ones as ``dtype`` when given; ``tensors`` replaces the state dict, e.g. with some
    tensors in float16), config, tokenizer and ``info`` into one safetensors file. Loading restores the model's
    own dtype (float32)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(to_bytes(model, tokenizer, info, dtype, tensors))
    return path


def to_bytes(
    model: Transformer,
    tokenizer: Tokenizer | None = None,
    info: dict | None = None,
    dtype: torch.dtype | None = None,
    state: dict[str, torch.Tensor] | None = None,
) -> bytes:
    if not isinstance(model, Transformer):
        raise TypeError(foreign_module(model, "save_checkpoint"))
    meta = {"format": FORMAT, "config": model.cfg.to_json(), "info": json.dumps(info or {})}
    if tokenizer is not None:
        meta["tokenizer"] = tokenizer.to_str()
    tensors = {}
    for key, value in (model.state_dict() if state is None else state).items():
        value = value.detach().cpu()
        if dtype is not None and value.is_floating_point():
            value = value.to(dtype)
        tensors[key] = value.contiguous()
    return st_save(tensors, metadata=meta)


def _build(contents: Contents, kind: str, n_heads: int | None, norm: str | None, name: str = "") -> LoadedModel:
    if contents.config is not None:
        raw = contents.config
        cfg = config_from_json(raw) if isinstance(raw, str) else config_from_dict(raw)
        loaded = build_from_state(cfg, contents.state, contents.tokenizer, contents.info)
        family = "Attention Lab checkpoint (its own config)"
    elif is_post_state(contents.state):
        loaded = load_post_state(
            contents.state,
            n_heads=n_heads,
            norm=norm,
            hint=contents.hint,
            tokenizer=contents.tokenizer,
            info=contents.info,
        )
        family = str(loaded.info.get("family", "the post's encoder"))
    else:
        raise unrecognised(contents.state, kind)
    report = loaded.report
    report.family, report.files = family, [name] if name else []
    # a strict load: every tensor is a weight, but what the post's importer named as outside its encoder
    report.used = sorted(k for k in contents.state if isinstance(k, str) and k not in report.left_out)
    report.dtypes = sorted(
        {str(t.dtype).removeprefix("torch.") for t in contents.state.values() if isinstance(t, torch.Tensor)}
    )
    report.tokenizer = "stored in the file" if contents.tokenizer is not None else ""
    return loaded


def load_bytes(
    data: bytes, name: str = "upload", *, n_heads: int | None = None, norm: str | None = None, hint: dict | None = None
) -> LoadedModel:
    """Load a checkpoint given as bytes (an upload). ``name`` chooses the format by extension; ``n_heads`` and
    ``norm`` ("pre"/"post") answer what the post's encoder does not store; ``hint`` is a config found beside the
    file (its own stored values win)."""
    if Path(name).suffix.lower() == ".gguf":
        with tempfile.TemporaryDirectory() as folder:  # the gguf reader maps a file; it never runs its contents
            path = Path(folder) / "upload.gguf"
            path.write_bytes(data)
            return load_gguf(path)
    if Path(name).suffix.lower() == ".zip":  # a whole folder in one upload
        with unpacked(data) as folder:
            return _load_folder(folder, n_heads, norm)
    contents = read_contents(data, name)
    contents.hint = {**(hint or {}), **contents.hint}
    return _build(contents, file_kind(name), n_heads, norm, Path(name).name)


def upload_questions(data: bytes, name: str) -> Questions:
    """:func:`questions` for an uploaded file, a zipped folder included."""
    if Path(name).suffix.lower() == ".zip":
        with unpacked(data) as folder:
            return questions_at(folder)
    return questions(data, name)


def questions_at(path: str | Path) -> Questions:
    """:func:`questions` for a local file or folder, with the config.json and tokenizer.json beside it."""
    path = Path(path)
    if path.is_dir():
        raw = _read_config(path)
        if raw is not None and "model_type" in raw:  # a Hugging Face folder: it may lack only its tokenizer
            vocab = raw.get("vocab_size")
            found = _has_tokenizer(path) or any(p.suffix.lower() == ".gguf" for p in path.iterdir())
            pair = raw.get("is_encoder_decoder") is True or raw.get("model_type") in ("t5", "bart", "mbart")
            return Questions(
                needs_tokenizer=not found,
                vocab_size=vocab if isinstance(vocab, int) else 0,
                looked_for=LOOKED_FOR,
                pair=pair,
            )
        weights = weights_in(path)
        if weights is None:
            return Questions()  # nothing to load: loading says so
        asked = questions(weights.read_bytes(), weights.name, hint=raw, tokenizer_beside=_has_tokenizer(path))
        return replace(asked, looked_for=WITHOUT_GGUF) if asked.needs_tokenizer else asked
    if not path.is_file() or path.suffix.lower() == ".gguf":
        return Questions()
    asked = questions(
        path.read_bytes(), path.name, hint=_hint_beside(path.parent), tokenizer_beside=_has_tokenizer(path)
    )
    return replace(asked, looked_for=WITHOUT_GGUF) if asked.needs_tokenizer else asked


def _has_tokenizer(path: Path) -> bool:
    return tokenizer_beside(path) is not None


def load_checkpoint(path: str | Path, *, n_heads: int | None = None, norm: str | None = None) -> LoadedModel:
    """Load a native file, a ``.pt``, the post's state dict (``n_heads``: its number of heads), a native folder,
    a folder holding the post's weights or a Hugging Face BERT folder. A ``tokenizer.json`` and a
    ``config.json`` beside a file are used when the file brings none."""
    path = Path(path)
    if path.is_dir():
        return _load_folder(path, n_heads, norm)
    if not path.is_file():
        raise CheckpointError(f"no such file or folder: {path}")
    if path.suffix.lower() == ".gguf":
        return load_gguf(path)
    loaded = load_bytes(path.read_bytes(), path.name, n_heads=n_heads, norm=norm, hint=_hint_beside(path.parent))
    _tokenizer_beside(loaded, path.parent)
    return loaded


def tokenizer_beside(path: Path) -> Path | None:
    """The tokenizer file in a folder, or beside a file (tokenizer.json, vocab.txt, vocab.json + merges.txt,
    tokenizer.model)."""
    folder = path if path.is_dir() else path.parent
    for name in ("tokenizer.json", "vocab.txt", "tokenizer.model"):
        if (folder / name).is_file():
            return folder / name
    return folder / "vocab.json" if (folder / "vocab.json").is_file() and (folder / "merges.txt").is_file() else None


def _tokenizer_beside(loaded: LoadedModel, folder: Path) -> None:
    """A file that stored no tokenizer takes the one beside it (any file kind tokenizer_files reads)."""
    if loaded.tokenizer is not None:
        return
    tokenizer, source, files = folder_tokenizer(folder, {}, gguf=False)
    if tokenizer is not None:
        loaded.attach_tokenizer(tokenizer)
        loaded.report.files += [f for f in files if f not in loaded.report.files]
    loaded.report.tokenizer = f"{source}, beside the file" if tokenizer is not None else source


def _read_config(folder: Path) -> dict | None:
    cfg_path = folder / "config.json"
    if not cfg_path.is_file():
        return None
    try:
        raw = load_json_file(cfg_path)
    except ValueError as exc:
        raise CheckpointError(str(exc)) from None
    if not isinstance(raw, dict):
        raise CheckpointError("config.json must hold a JSON object")
    return raw


def _hint_beside(folder: Path) -> dict:
    """A config.json beside a weights file, as a hint (never a Hugging Face config, which names its family)."""
    try:
        raw = _read_config(folder)
    except CheckpointError:
        return {}
    return raw if raw is not None and "model_type" not in raw else {}


def weights_in(folder: Path) -> Path | None:
    """The weights file of a folder: model.safetensors, else its only .safetensors, else its only .pt/.pth/.bin."""
    if (folder / "model.safetensors").is_file():
        return folder / "model.safetensors"
    for suffixes in ((".safetensors",), (".pt", ".pth", ".bin")):
        files = sorted(f for f in folder.iterdir() if f.is_file() and f.suffix.lower() in suffixes)
        if len(files) == 1:
            return files[0]
    return None


def _load_folder(folder: Path, n_heads: int | None, norm: str | None) -> LoadedModel:
    raw = _read_config(folder)
    if raw is not None and "model_type" in raw:  # a Hugging Face folder: its family's importer
        return load_hf_folder(folder, raw)
    weights = weights_in(folder)
    foreign = foreign_folder(folder) if weights is None else None
    if foreign is not None:
        raise CheckpointError(foreign)
    if weights is None:
        what = "config.json but no weights file" if raw is not None else "no config.json and no single weights file"
        raise CheckpointError(f"the folder has {what} (model.safetensors, or one .safetensors / .pt / .pth file)")
    contents = read_contents(weights.read_bytes(), weights.name)
    if contents.config is None and raw is not None and not is_post_state(contents.state):
        contents.config = raw  # a native folder: config.json is our config
    contents.hint = {**(raw or {}), **contents.hint}
    loaded = _build(contents, file_kind(weights.name), n_heads, norm, weights.name)
    if raw is not None:
        loaded.report.files.insert(0, "config.json")
    _tokenizer_beside(loaded, folder)
    return loaded
