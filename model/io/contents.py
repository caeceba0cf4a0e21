"""What a weights file holds, read without building a model: its tensors, an Attention Lab config (native
files), the hint a reader stored (sizes, n_heads), a tokenizer; and what its user must still say (:class:`Questions`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from model.errors import CheckpointError
from model.io.formats import foreign_format, nanochat_state
from model.io.post_layout import (
    NAME_MAP_DOC,
    POST_DEFAULT_HEADS,
    heads_from_hint,
    is_post_state,
    norm_from_hint,
    read_layout,
)
from model.io.state import read_safetensors
from model.io.tokenizer import Tokenizer
from model.io.torchfile import ACCEPTED, read_torch

FORMAT = "attention-lab/1"
#: where readers keep the state dict inside a .pt dict, and the sizes beside it
STATE_KEYS = ("model_state_dict", "state_dict", "model", "module", "net", "weights")
HINT_KEYS = ("config", "model_config", "args", "hparams", "hyperparameters", "model_args")


@dataclass
class Contents:
    """What one weights file holds, before a model is built: tensors by name, an Attention Lab config (native
    files), a hint a reader stored (sizes, n_heads), a tokenizer and free-form info."""

    state: dict[str, Any]
    config: dict | str | None = None  # our config: a dict (.pt) or JSON text (safetensors metadata)
    hint: dict[str, Any] = field(default_factory=dict)
    tokenizer: Tokenizer | None = None
    info: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Questions:
    """What a file does not say and its user must: the number of heads (the post's encoder does not store it)
    and a tokenizer (a file that brings none)."""

    head_choices: tuple[int, ...] = ()  # non-empty: ask, offering these
    heads: int = 0  # the default to offer
    ask_norm: bool = False  # the post's encoder: pre- or post-norm blocks look the same in the weights
    needs_tokenizer: bool = False
    looked_for: str = ""  # the tokenizer files looked for beside the weights, when none was found
    d_model: int = 0
    vocab_size: int = 0
    pair: bool = False  # an encoder–decoder (T5, BART): which stack to open, and the decoder's source


def read_contents(data: bytes, name: str) -> Contents:
    foreign = foreign_format(data, name)
    if foreign is not None:
        raise CheckpointError(foreign)
    suffix = Path(name).suffix.lower()
    if suffix in (".pt", ".pth", ".bin"):
        return _torch_contents(read_torch(data))
    tensors, meta = read_safetensors(data)
    tok = Tokenizer.from_str(meta["tokenizer"]) if "tokenizer" in meta else None
    try:
        info = json.loads(meta.get("info", "{}"))
    except json.JSONDecodeError:
        info = {}
    info = info if isinstance(info, dict) else {}
    if meta.get("format") == FORMAT and "config" in meta:
        return Contents(tensors, meta["config"], tokenizer=tok, info=info)
    hint: dict[str, Any] = dict(meta)
    if "config" in meta:  # a reader's own json.dumps(config) in the metadata
        try:
            stored = json.loads(meta["config"])
            hint.update(stored if isinstance(stored, dict) else {})
        except json.JSONDecodeError:
            pass
    return Contents(tensors, None, hint, tok, info)


def _torch_contents(obj: Any) -> Contents:
    if not isinstance(obj, dict):
        raise CheckpointError(f"the file holds a {type(obj).__name__}, not a dict of tensors. {ACCEPTED}")
    if "state_dict" in obj and "config" in obj and not is_post_state(obj.get("state_dict") or {}):
        if not isinstance(obj["state_dict"], dict):
            raise CheckpointError("'state_dict' must be a dict of tensors")
        tok = obj.get("tokenizer")
        return Contents(
            obj["state_dict"], obj["config"], tokenizer=Tokenizer.from_str(tok) if isinstance(tok, str) else None
        )
    if is_post_state(obj):
        return Contents(obj)
    for key in STATE_KEYS:  # {'model_state_dict': ..., 'optimizer_state_dict': ..., 'epoch': 3, 'config': {...}}
        if isinstance(obj.get(key), dict) and obj[key] and not any(hasattr(v, "shape") for v in obj.values()):
            hint: dict[str, Any] = {}
            for name in HINT_KEYS:
                if isinstance(obj.get(name), dict):
                    hint.update(obj[name])
            hint.update({k: v for k, v in obj.items() if isinstance(v, int | str | bool)})
            tok = obj.get("tokenizer")
            return Contents(obj[key], hint=hint, tokenizer=Tokenizer.from_str(tok) if isinstance(tok, str) else None)
    return Contents(obj)


def unrecognised(state: dict[str, Any], kind: str) -> CheckpointError:
    keys = sorted(k for k in state if isinstance(k, str))
    nanochat = nanochat_state(keys)
    if nanochat is not None:
        return CheckpointError(nanochat)
    if any(k.startswith("blocks.0.attn.w_q") for k in keys) or "tok_emb.weight" in keys:
        return CheckpointError(
            f"this {kind} holds Attention Lab weights but no Attention Lab config in its metadata; save the model "
            "with model.io.checkpoint.save_checkpoint (which stores the config), or put it as model.safetensors "
            "in a folder with config.json (model.cfg.to_json()). A .pt must be a dict {'config': {...}, "
            "'state_dict': {...}}"
        )
    shown = ", ".join(keys[:8]) + (f" … ({len(keys)} in all)" if len(keys) > 8 else "")
    return CheckpointError(
        f"this {kind}'s tensors are neither the post's encoder nor an Attention Lab checkpoint. Found: "
        f"{shown or 'no tensors'}. Expected the post's names — embedding.weight, pos_enc.pe, "
        f"layers.{{i}}.attn.W_q.weight, … (mapped as {NAME_MAP_DOC}) — or a file written by save_checkpoint. "
        f"{ACCEPTED}"
    )


def file_kind(name: str) -> str:
    return "PyTorch file" if Path(name).suffix.lower() in (".pt", ".pth", ".bin") else "safetensors file"


def questions(data: bytes, name: str, *, hint: dict | None = None, tokenizer_beside: bool = False) -> Questions:
    """What the user must say before this file loads (nothing for most files; heads, block order and perhaps a
    tokenizer for the post's encoder). Raises CheckpointError as loading would."""
    if Path(name).suffix.lower() == ".gguf":
        return Questions()
    contents = read_contents(data, name)
    has_tok = contents.tokenizer is not None or tokenizer_beside
    if contents.config is not None or not is_post_state(contents.state):
        return Questions(needs_tokenizer=not has_tok and contents.config is not None)
    layout = read_layout(contents.state)
    hint = {**(hint or {}), **contents.hint}
    stored = heads_from_hint(hint)
    default = POST_DEFAULT_HEADS if layout.d_model % POST_DEFAULT_HEADS == 0 else layout.head_choices[0]
    return Questions(
        head_choices=() if stored else layout.head_choices,
        heads=stored or default,
        ask_norm=norm_from_hint(hint) is None,
        needs_tokenizer=not has_tok,
        d_model=layout.d_model,
        vocab_size=layout.vocab_size,
    )
