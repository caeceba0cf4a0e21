"""What every Hugging Face family importer shares: reading a folder's config and weights (one safetensors file,
shards with their index, or a pytorch_model.bin read with ``torch.load(weights_only=True)``), checking config
values, and the translations several families use (activations, RoPE base, per-layer attention types)."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import torch

from model.config import TransformerConfig
from model.errors import CheckpointError
from model.io.bert import ACTIVATIONS
from model.io.state import LoadedModel, build_from_state, read_safetensors
from model.io.tokenizer import Tokenizer
from model.io.torchfile import read_torch

MAX_SHARDS = 256


def need(raw: Mapping[str, Any], key: str, kind: type = int) -> Any:
    """``raw[key]``, which must be there and be of ``kind``; a CheckpointError that names it otherwise."""
    if key not in raw:
        raise CheckpointError(f"config.json lacks {key!r}")
    value = raw[key]
    if kind is float and isinstance(value, int) and not isinstance(value, bool):
        value = float(value)
    if isinstance(value, bool) != (kind is bool) or not isinstance(value, kind):
        raise CheckpointError(f"config.json's {key!r} must be {kind.__name__}, got {value!r}")
    return value


def activation(name: Any) -> str:
    if name not in ACTIVATIONS:
        raise CheckpointError(f"unsupported activation {name!r} (supported: {', '.join(ACTIVATIONS)})")
    return ACTIVATIONS[name]


def rope_base(raw: Mapping[str, Any]) -> float:
    """θ of RoPE: transformers 5 keeps it in rope_parameters, older configs in rope_theta; scaled variants are
    refused by name (their angles differ)."""
    params = raw.get("rope_parameters") or raw.get("rope_scaling") or {}
    kind = params.get("rope_type", params.get("type", "default")) if isinstance(params, dict) else "default"
    if kind != "default":
        raise CheckpointError(f"RoPE scaling {kind!r} is not supported yet (only the default rotary angles)")
    theta = params.get("rope_theta", raw.get("rope_theta", 10000.0)) if isinstance(params, dict) else 10000.0
    if isinstance(theta, bool) or not isinstance(theta, int | float) or theta <= 0:
        raise CheckpointError(f"invalid rope_theta {theta!r}")
    return float(theta)


def layer_types(raw: Mapping[str, Any], n_layers: int, window: int | None) -> tuple[tuple[str, ...], int]:
    """(per-layer "global"/"sliding", window) from ``layer_types`` ("full_attention"/"sliding_attention") or a
    ``sliding_window`` that applies to every layer."""
    names = raw.get("layer_types")
    if isinstance(names, list) and names:
        if len(names) != n_layers or set(names) - {"full_attention", "sliding_attention"}:
            raise CheckpointError(f"unsupported layer_types {names!r}")
        types = tuple("sliding" if n == "sliding_attention" else "global" for n in names)
        if "sliding" not in types:
            return (), 0
        if not window:
            raise CheckpointError("config.json has sliding layers but no sliding_window")
        return types, int(window)
    return (("sliding",) * n_layers, int(window)) if window else ((), 0)


def read_weights(folder: Path) -> dict[str, torch.Tensor]:
    """Every tensor of a save_pretrained folder, by its Hugging Face name (any float dtype: the model casts)."""
    single, index = folder / "model.safetensors", folder / "model.safetensors.index.json"
    if single.is_file():
        return read_safetensors(single.read_bytes())[0]
    if index.is_file():
        try:
            weight_map = json.loads(index.read_text(encoding="utf-8"))["weight_map"]
            shards = sorted(set(weight_map.values()))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError, KeyError, TypeError, AttributeError) as exc:
            raise CheckpointError(f"model.safetensors.index.json cannot be read: {exc}") from None
        if len(shards) > MAX_SHARDS or any("/" in s or "\\" in s or s.startswith(".") for s in shards):
            raise CheckpointError("model.safetensors.index.json names shards outside its folder")
        tensors: dict[str, torch.Tensor] = {}
        for shard in shards:
            path = folder / shard
            if not path.is_file():
                raise CheckpointError(f"the index names {shard}, which is not in the folder")
            tensors.update(read_safetensors(path.read_bytes())[0])
        return tensors
    legacy = folder / "pytorch_model.bin"
    if legacy.is_file():
        state = read_torch(legacy.read_bytes())
        if not isinstance(state, dict):
            raise CheckpointError("pytorch_model.bin does not hold a state dict")
        return state
    raise CheckpointError(f"{folder} has config.json but no model.safetensors (nor shards with their index)")


def build(
    folder: Path,
    raw: Mapping[str, Any],
    cfg: TransformerConfig,
    rename: Callable[[dict[str, torch.Tensor], TransformerConfig], dict[str, torch.Tensor]],
    family: str,
) -> LoadedModel:
    """Read the weights, rename them onto ours, build and say which family it was read as."""
    state = rename(read_weights(folder), cfg)
    tok_path = folder / "tokenizer.json"
    tokenizer = Tokenizer.from_file(tok_path) if tok_path.is_file() else None
    name = raw.get("_name_or_path") or folder.name
    info = {
        "name": name if isinstance(name, str) else folder.name,
        "source": str(folder),
        "model_type": raw.get("model_type"),
        "family": family,
    }
    return build_from_state(cfg, state, tokenizer, info)


def config(**fields: Any) -> TransformerConfig:
    try:
        return TransformerConfig(dropout=0.0, **fields)
    except (TypeError, ValueError) as exc:
        raise CheckpointError(f"this model cannot be built: {exc}") from None


def rename(
    hf: Mapping[str, torch.Tensor], n_layers: int, top: Mapping[str, str], layer: Mapping[str, str], prefix: str
) -> tuple[dict[str, torch.Tensor], set[str]]:
    """Tensors renamed onto ours by two maps — ``top``: whole names; ``layer``: names below ``prefix`` (formatted
    with the layer ``i``) to names below ``blocks.{i}.``, weight and bias — and the names it took."""
    out: dict[str, torch.Tensor] = {}
    used: set[str] = set()
    for src, dst in top.items():
        if src in hf:
            out[dst] = hf[src]
            used.add(src)
    for i in range(n_layers):
        for src, dst in layer.items():
            for part in ("weight", "bias"):
                key = f"{prefix.format(i=i)}{src}.{part}"
                if key in hf:
                    out[f"blocks.{i}.{dst}.{part}"] = hf[key]
                    used.add(key)
    return out, used


def leftovers(hf: Mapping[str, torch.Tensor], used: set[str], ignorable: tuple[str, ...]) -> dict[str, torch.Tensor]:
    """The tensors no rule took (and that are not known extras): they surface as "unexpected keys"."""
    return {k: v for k, v in hf.items() if k not in used and not k.startswith(ignorable) and not k.endswith(ignorable)}
