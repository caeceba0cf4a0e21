"""Reading a save_pretrained folder's weights: one safetensors file, shards with their index, or a pytorch_model.bin
read with ``torch.load(weights_only=True)`` (a state dict nested under a training script's key too), and the
family's plain names for them, whatever wrapper or TensorFlow-era names a file carries."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch

from model.errors import CheckpointError
from model.io.budget import load_json_file
from model.io.formats import foreign_folder
from model.io.state import read_safetensors
from model.io.torchfile import read_torch

MAX_SHARDS = 256
#: where a training script keeps the state dict inside a pytorch_model.bin ({"state_dict": …}, Lightning, …)
NESTED = ("state_dict", "model_state_dict", "model", "module")
#: TensorFlow-era names transformers renames on load (its "legacy" conversion), and so do we
LEGACY = (("LayerNorm.gamma", "LayerNorm.weight"), ("LayerNorm.beta", "LayerNorm.bias"))


def _read_index(folder: Path) -> list[str]:
    try:
        weight_map = load_json_file(folder / "model.safetensors.index.json")["weight_map"]
        shards = sorted(set(weight_map.values()))
    except OSError as exc:
        raise CheckpointError(f"model.safetensors.index.json cannot be read ({exc.strerror})") from None
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise CheckpointError(f"model.safetensors.index.json cannot be read: {exc}") from None
    if len(shards) > MAX_SHARDS or any(
        not isinstance(s, str) or "/" in s or "\\" in s or s.startswith(".") for s in shards
    ):
        raise CheckpointError("model.safetensors.index.json names shards outside its folder")
    return shards


def _unnest(state: Any, source: str) -> dict[str, torch.Tensor]:
    """The tensors of a torch.load'ed object: a state dict, or one nested under a training script's key
    ({"state_dict": {…}, "epoch": 3})."""
    if not isinstance(state, dict):
        raise CheckpointError(f"{source} does not hold a state dict")
    if not any(isinstance(v, torch.Tensor) for v in state.values()):
        inner = next((state[k] for k in NESTED if isinstance(state.get(k), dict) and state[k]), None)
        if inner is not None:
            return _unnest(inner, source)
    odd = [str(k) for k, v in state.items() if not isinstance(v, torch.Tensor)]
    if odd:
        raise CheckpointError(f"{source} holds entries that are not tensors: {', '.join(odd[:5])}")
    return state


def read_files(folder: Path) -> tuple[dict[str, torch.Tensor], list[str]]:
    """Every tensor of a save_pretrained folder by the file's names (any float dtype: the model casts), and the
    weight files read."""
    single = folder / "model.safetensors"
    if single.is_file():
        return read_safetensors(single.read_bytes())[0], [single.name]
    if (folder / "model.safetensors.index.json").is_file():
        tensors: dict[str, torch.Tensor] = {}
        shards = _read_index(folder)
        for shard in shards:
            path = folder / shard
            if not path.is_file():
                raise CheckpointError(f"the index names {shard}, which is not in the folder")
            tensors.update(read_safetensors(path.read_bytes())[0])
        return tensors, ["model.safetensors.index.json", *shards]
    legacy = folder / "pytorch_model.bin"
    if legacy.is_file():
        return _unnest(read_torch(legacy.read_bytes()), "pytorch_model.bin"), [legacy.name]
    foreign = foreign_folder(folder)
    if foreign is not None:
        raise CheckpointError(foreign)
    if (folder / "pytorch_model.bin.index.json").is_file():
        raise CheckpointError(
            "this folder's weights are sharded pytorch_model-*.bin files; re-save them as safetensors (in "
            "transformers: model.save_pretrained(folder), which writes model.safetensors shards) to open it here"
        )
    raise CheckpointError("the folder has config.json but no model.safetensors (nor shards with their index)")


def read_weights(folder: Path) -> dict[str, torch.Tensor]:
    """Every tensor of a save_pretrained folder, by the file's names."""
    return read_files(folder)[0]


def normalised(names: list[str], anchor: str, base: str) -> dict[str, str]:
    """Each file name -> the family's plain name: the wrapper a training script put around the model (``model.``,
    ``module.``) and the base model's prefix (``bert.``, ``transformer.``) taken off, so a BertModel and a
    BertForMaskedLM, a Lightning checkpoint and a plain one read alike; TensorFlow-era gamma/beta renamed. ``anchor``
    is a name every file of the family holds below its base (``embeddings.word_embeddings.weight``)."""
    fixed = {}
    for name in names:
        new = name
        for old, repl in LEGACY:
            new = new.replace(old, repl)
        fixed[name] = new
    found = sorted((n for n in fixed.values() if n == anchor or n.endswith("." + anchor)), key=len)
    prefix = found[0][: -len(anchor)] if found else base
    wrapper = (
        prefix[: -len(base)]
        if base and prefix.endswith(base) and (len(prefix) == len(base) or prefix[-len(base) - 1] == ".")
        else prefix
    )
    out = {}
    for name, new in fixed.items():
        if new.startswith(prefix):
            new = new[len(prefix) :]
        elif wrapper and new.startswith(wrapper):
            new = new[len(wrapper) :]
        out[name] = new
    return out
