"""Save and load Attention Lab checkpoints.

Native format: one safetensors file whose metadata holds the config (JSON), the tokenizer (its
tokenizer.json text) and free-form info, so one file restores model + tokenizer. A folder with
``model.safetensors`` + ``config.json`` (+ ``tokenizer.json``) works too, and Hugging Face BERT folders
are recognised and imported (see :mod:`model.io.bert`).

Plain PyTorch files (``.pt``/``.pth``) go through ``torch.load(weights_only=True)`` only: nothing in a
checkpoint is ever unpickled into arbitrary objects or executed.
"""

from __future__ import annotations

import io
import json
import pickle  # only for its exception type: nothing is ever unpickled
import tempfile
from pathlib import Path

import torch
from safetensors.torch import save as st_save

from model.errors import CheckpointError
from model.io.bert import load_bert_folder
from model.io.gguf import load_gguf
from model.io.state import LoadedModel, build_from_state, config_from_dict, config_from_json, read_safetensors
from model.io.tokenizer import Tokenizer
from model.transformer import Transformer

FORMAT = "attention-lab/1"


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


def load_bytes(data: bytes, name: str = "upload") -> LoadedModel:
    """Load a checkpoint given as bytes (an upload). ``name`` chooses the format by extension."""
    suffix = Path(name).suffix.lower()
    if suffix in (".pt", ".pth", ".bin"):
        return _load_torch_bytes(data)
    if suffix == ".gguf":
        with tempfile.TemporaryDirectory() as folder:  # the gguf reader maps a file; it never runs its contents
            path = Path(folder) / "upload.gguf"
            path.write_bytes(data)
            return load_gguf(path)
    tensors, meta = read_safetensors(data)
    if meta.get("format") != FORMAT or "config" not in meta:
        raise CheckpointError(
            "this safetensors file has no Attention Lab config in its metadata; load its folder "
            "(with config.json) instead, or save it with model.io.checkpoint.save_checkpoint"
        )
    cfg = config_from_json(meta["config"])
    tokenizer = Tokenizer.from_str(meta["tokenizer"]) if "tokenizer" in meta else None
    try:
        info = json.loads(meta.get("info", "{}"))
    except json.JSONDecodeError:
        info = {}
    return build_from_state(cfg, tensors, tokenizer, info if isinstance(info, dict) else {})


ACCEPTED = (
    "Attention Lab reads .safetensors files (its own, or a folder with config.json such as a Hugging Face BERT "
    "folder), LLaMA-architecture .gguf files and .pt/.pth files that hold only tensors, numbers, strings, lists "
    "and dicts: "
    "{'config': {...}, 'state_dict': {...}}"
)


def torch_load_problem(data: bytes, exc: Exception) -> str:
    """What is wrong with bytes that ``torch.load(weights_only=True)`` refused, in our words (PyTorch's message
    suggests disabling the safety check, which is the wrong advice for an untrusted file)."""
    if data[:4] == b"PK\x03\x04":
        if isinstance(exc, pickle.UnpicklingError):
            return (
                "this PyTorch file holds Python objects beyond plain tensors and containers (a pickled class or "
                "function); they are never unpickled here, because unpickling can run code"
            )
        return "this PyTorch file is damaged or cut short: its zip archive cannot be read"
    if data[:1] == b"\x80":
        return "this is a bare pickle, not a file written by torch.save; it is never unpickled here"
    return "this is not a PyTorch file: it has neither the zip archive of torch.save nor a pickle header"


def _load_torch_bytes(data: bytes) -> LoadedModel:
    if not data:
        raise CheckpointError("the file is empty")
    try:
        obj = torch.load(io.BytesIO(data), map_location="cpu", weights_only=True)
    except Exception as exc:  # PyTorch's own text would advise weights_only=False: never pass it on
        raise CheckpointError(f"{torch_load_problem(data, exc)}. {ACCEPTED}") from None
    if not isinstance(obj, dict) or "config" not in obj or "state_dict" not in obj:
        raise CheckpointError(
            "a .pt checkpoint must be a dict {'config': {...}, 'state_dict': {...}}; a bare state dict "
            "has no config (save it with model.io.checkpoint.save_checkpoint instead)"
        )
    cfg = config_from_dict(obj["config"])
    if not isinstance(obj["state_dict"], dict):
        raise CheckpointError("'state_dict' must be a dict of tensors")
    tok = obj.get("tokenizer")
    return build_from_state(cfg, obj["state_dict"], Tokenizer.from_str(tok) if isinstance(tok, str) else None)


def load_checkpoint(path: str | Path) -> LoadedModel:
    """Load a native file, a ``.pt``, a native folder or a Hugging Face BERT folder."""
    path = Path(path)
    if path.is_dir():
        return _load_folder(path)
    if not path.is_file():
        raise CheckpointError(f"no such file or folder: {path}")
    if path.suffix.lower() == ".gguf":
        return load_gguf(path)
    return load_bytes(path.read_bytes(), path.name)


def _load_folder(folder: Path) -> LoadedModel:
    cfg_path = folder / "config.json"
    if not cfg_path.is_file():
        files = sorted(folder.glob("*.safetensors"))
        if len(files) == 1:
            return load_checkpoint(files[0])
        raise CheckpointError(f"{folder} has no config.json and no single .safetensors checkpoint")
    try:
        raw = json.loads(cfg_path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise CheckpointError(f"config.json is not valid JSON: {exc}") from None
    if isinstance(raw, dict) and raw.get("model_type") == "bert":
        return load_bert_folder(folder)
    weights = folder / "model.safetensors"
    if not weights.is_file():
        raise CheckpointError(f"{folder} has config.json but no model.safetensors")
    cfg = config_from_dict(raw)
    tensors, _ = read_safetensors(weights.read_bytes())
    tok_path = folder / "tokenizer.json"
    tokenizer = Tokenizer.from_file(tok_path) if tok_path.is_file() else None
    return build_from_state(cfg, tensors, tokenizer)
