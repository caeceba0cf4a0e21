"""Save and load the from-scratch encoder.

Native format: one safetensors file whose metadata holds the config (JSON), the tokenizer (its
tokenizer.json text) and free-form info, so one file restores model + tokenizer. A folder with
``model.safetensors`` + ``config.json`` (+ ``tokenizer.json``) works too, and Hugging Face BERT folders
are recognised and imported (see :mod:`model.bert_import`).

Plain PyTorch files (``.pt``/``.pth``) go through ``torch.load(weights_only=True)`` only: nothing in a
checkpoint is ever unpickled into arbitrary objects or executed.
"""

from __future__ import annotations

import json
import math
import struct
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
from safetensors.torch import load as st_load
from safetensors.torch import save as st_save

from model.config import EncoderConfig
from model.encoder import TransformerEncoder
from model.errors import CheckpointError
from model.tokenizer import Tokenizer

FORMAT = "attention-lab/1"
MAX_HEADER_BYTES = 100 * 1024 * 1024


@dataclass
class Loaded:
    """A restored model (eval mode), its tokenizer (if one was stored) and metadata."""

    model: TransformerEncoder
    tokenizer: Tokenizer | None
    info: dict[str, Any] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)


def save_checkpoint(
    path: str | Path,
    model: TransformerEncoder,
    tokenizer: Tokenizer | None = None,
    info: dict[str, Any] | None = None,
) -> Path:
    """Write model weights, config, tokenizer and ``info`` into one safetensors file."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(to_bytes(model, tokenizer, info))
    return path


def to_bytes(model: TransformerEncoder, tokenizer: Tokenizer | None = None, info: dict | None = None) -> bytes:
    meta = {"format": FORMAT, "config": model.cfg.to_json(), "info": json.dumps(info or {})}
    if tokenizer is not None:
        meta["tokenizer"] = tokenizer.to_str()
    tensors = {k: v.detach().cpu().contiguous() for k, v in model.state_dict().items()}
    return st_save(tensors, metadata=meta)


def _read_header(data: bytes) -> dict[str, Any]:
    """Parse and sanity-check a safetensors header before any tensor is materialised."""
    if len(data) < 8:
        raise CheckpointError("the file is empty or too short to be a safetensors checkpoint")
    (n,) = struct.unpack("<Q", data[:8])
    if n > MAX_HEADER_BYTES or 8 + n > len(data):
        raise CheckpointError(
            "not a safetensors checkpoint, or the file is truncated (its header claims "
            f"{n:,} bytes but the file has {len(data):,})"
        )
    try:
        header = json.loads(data[8 : 8 + n])
    except (UnicodeDecodeError, json.JSONDecodeError):
        raise CheckpointError("not a safetensors checkpoint: its header is not valid JSON") from None
    if not isinstance(header, dict):
        raise CheckpointError("not a safetensors checkpoint: its header is not a JSON object")
    body = len(data) - 8 - n
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        try:
            start, end = entry["data_offsets"]
            shape = entry["shape"]
        except (TypeError, KeyError, ValueError):
            raise CheckpointError(f"tensor {name!r} has a malformed header entry") from None
        if end > body or start > end:
            raise CheckpointError(
                f"the file is truncated or its header lies: tensor {name!r} ends at byte {end:,} "
                f"but the data section has {body:,} bytes"
            )
        if math.prod(shape) * _itemsize(entry.get("dtype")) != end - start:
            raise CheckpointError(f"tensor {name!r}: its shape {shape} does not match its byte size")
    return header


def _itemsize(dtype: Any) -> int:
    sizes = {"F64": 8, "F32": 4, "F16": 2, "BF16": 2, "I64": 8, "I32": 4, "I16": 2, "I8": 1, "U8": 1, "BOOL": 1}
    if dtype not in sizes:
        raise CheckpointError(f"unsupported tensor dtype {dtype!r} in checkpoint")
    return sizes[dtype]


def read_safetensors(data: bytes) -> tuple[dict[str, torch.Tensor], dict[str, str]]:
    """Validated (tensors, metadata) from safetensors bytes."""
    header = _read_header(data)
    meta = header.get("__metadata__") or {}
    try:
        tensors = st_load(data)
    except Exception as exc:  # SafetensorError and friends
        raise CheckpointError(f"could not read the safetensors data: {exc}") from None
    return tensors, {str(k): str(v) for k, v in meta.items()}


def config_from_json(text: str) -> EncoderConfig:
    try:
        return EncoderConfig.from_dict(json.loads(text))
    except json.JSONDecodeError as exc:
        raise CheckpointError(f"the stored config is not valid JSON: {exc}") from None
    except (TypeError, ValueError) as exc:
        raise CheckpointError(f"invalid model config: {exc}") from None


def build_from_state(
    cfg: EncoderConfig, state: dict[str, torch.Tensor], tokenizer: Tokenizer | None, info: dict | None = None
) -> Loaded:
    """Instantiate ``cfg`` and load ``state`` strictly, with readable errors and NaN/Inf warnings."""
    model = TransformerEncoder(cfg)
    expected = model.state_dict()
    missing = sorted(set(expected) - set(state))
    unexpected = sorted(set(state) - set(expected))
    problems = []
    if missing:
        problems.append(f"missing keys: {', '.join(missing[:8])}{' …' if len(missing) > 8 else ''}")
    if unexpected:
        problems.append(f"unexpected keys: {', '.join(unexpected[:8])}{' …' if len(unexpected) > 8 else ''}")
    for key in sorted(set(expected) & set(state)):
        if tuple(expected[key].shape) != tuple(state[key].shape):
            problems.append(f"{key}: expected shape {tuple(expected[key].shape)}, found {tuple(state[key].shape)}")
    if problems:
        raise CheckpointError("the weights do not fit the config — " + "; ".join(problems))
    notes = []
    for key, tensor in state.items():
        if not isinstance(tensor, torch.Tensor):
            raise CheckpointError(f"{key} is not a tensor")
        if tensor.is_floating_point() and not bool(torch.isfinite(tensor).all()):
            notes.append(f"{key} contains NaN or Inf values; outputs will not be meaningful")
    if notes:
        for note in notes:
            warnings.warn(note, stacklevel=2)
    model.load_state_dict({k: v.to(expected[k].dtype) for k, v in state.items()}, strict=True)
    model.eval()
    if tokenizer is not None:
        tokenizer.check_fits(cfg.vocab_size)
    return Loaded(model=model, tokenizer=tokenizer, info=info or {}, warnings=notes)


def load_bytes(data: bytes, name: str = "upload") -> Loaded:
    """Load a checkpoint given as bytes (an upload). ``name`` chooses the format by extension."""
    suffix = Path(name).suffix.lower()
    if suffix in (".pt", ".pth", ".bin"):
        return _load_torch_bytes(data)
    tensors, meta = read_safetensors(data)
    if meta.get("format") != FORMAT or "config" not in meta:
        raise CheckpointError(
            "this safetensors file has no Attention Lab config in its metadata; load its folder "
            "(with config.json) instead, or save it with model.checkpoint.save_checkpoint"
        )
    cfg = config_from_json(meta["config"])
    tokenizer = Tokenizer.from_str(meta["tokenizer"]) if "tokenizer" in meta else None
    try:
        info = json.loads(meta.get("info", "{}"))
    except json.JSONDecodeError:
        info = {}
    return build_from_state(cfg, tensors, tokenizer, info if isinstance(info, dict) else {})


def _load_torch_bytes(data: bytes) -> Loaded:
    import io

    if not data:
        raise CheckpointError("the file is empty")
    try:
        obj = torch.load(io.BytesIO(data), map_location="cpu", weights_only=True)
    except Exception as exc:
        raise CheckpointError(
            "refused to load this PyTorch file: only plain tensors and containers are accepted "
            f"(weights_only=True), nothing is unpickled or executed ({type(exc).__name__}: "
            f"{str(exc).splitlines()[0][:200] if str(exc) else ''})"
        ) from None
    if not isinstance(obj, dict) or "config" not in obj or "state_dict" not in obj:
        raise CheckpointError(
            "a .pt checkpoint must be a dict {'config': {...}, 'state_dict': {...}}; a bare state dict "
            "has no config (save it with model.checkpoint.save_checkpoint instead)"
        )
    cfg = obj["config"]
    try:
        cfg = EncoderConfig.from_dict(cfg)
    except (TypeError, ValueError) as exc:
        raise CheckpointError(f"invalid model config: {exc}") from None
    if not isinstance(obj["state_dict"], dict):
        raise CheckpointError("'state_dict' must be a dict of tensors")
    tok = obj.get("tokenizer")
    return build_from_state(cfg, obj["state_dict"], Tokenizer.from_str(tok) if isinstance(tok, str) else None)


def load_checkpoint(path: str | Path) -> Loaded:
    """Load a native file, a ``.pt``, a native folder or a Hugging Face BERT folder."""
    path = Path(path)
    if path.is_dir():
        return _load_folder(path)
    if not path.is_file():
        raise CheckpointError(f"no such file or folder: {path}")
    return load_bytes(path.read_bytes(), path.name)


def _load_folder(folder: Path) -> Loaded:
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
        from model.bert_import import load_bert_folder

        return load_bert_folder(folder)
    weights = folder / "model.safetensors"
    if not weights.is_file():
        raise CheckpointError(f"{folder} has config.json but no model.safetensors")
    try:
        cfg = EncoderConfig.from_dict(raw)
    except (TypeError, ValueError) as exc:
        raise CheckpointError(f"invalid model config: {exc}") from None
    tensors, _ = read_safetensors(weights.read_bytes())
    tok_path = folder / "tokenizer.json"
    tokenizer = Tokenizer.from_file(tok_path) if tok_path.is_file() else None
    return build_from_state(cfg, tensors, tokenizer)
