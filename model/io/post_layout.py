"""Reading a state dict of the post's encoder: which names it uses, every size its shapes tell, the variants
readers make (a wrapper's prefix, an output layer on top, learned or unsaved positions, no final norm, attention
biases) and the hints they store beside it. The importer itself is :mod:`model.io.post`."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import torch

from model.errors import CheckpointError
from model.positional import sinusoidal_table

POST_DEFAULT_HEADS = 8  # the post's TransformerEncoder(n_heads=8)
POST_DEFAULT_MAX_LEN = 512  # the post's TransformerEncoder(max_seq_len=512)
ANCHOR = "layers.0.attn.W_q.weight"
#: the post's name below "layers.{i}." -> ours below "blocks.{i}."
LAYER_MAP = {
    "attn.W_q": "attn.w_q",
    "attn.W_k": "attn.w_k",
    "attn.W_v": "attn.w_v",
    "attn.W_o": "attn.w_o",
    "ff.0": "ff.fc1",
    "ff.3": "ff.fc2",
    "norm1": "ln1",
    "norm2": "ln2",
}
#: names readers give a learned position table, in the order they are tried
LEARNED_TABLES = ("pos_enc.weight", "pos_enc.embedding.weight", "pos_embedding.weight", "pos_emb.weight")
_ENCODER_MODULES = ("embedding.", "pos_enc.", "layers.", "norm.")
SINUSOID_TOLERANCE = 1e-4  # a float32 table this close to the formula is the formula; half precision: its rounding
NAME_MAP_DOC = (
    "embedding → tok_emb · pos_enc.pe → the sinusoidal table · layers.{i} → blocks.{i} · attn.W_q/W_k/W_v/W_o → "
    "attn.w_q/w_k/w_v/w_o · ff.0 → ff.fc1 · ff.3 → ff.fc2 · norm1 → ln1 · norm2 → ln2 · norm → ln_f"
)


@dataclass(frozen=True)
class PostLayout:
    """What a state dict of the post's encoder says about the model, read from its names and shapes."""

    prefix: str  # before "embedding.weight": "" or a wrapper's "encoder.", "module.", …
    vocab_size: int
    d_model: int
    n_layers: int
    d_ff: int
    max_seq_len: int
    positional: str  # "sinusoidal" or "learned"
    table: str | None  # the key of the stored position table (None: not stored, the formula is used)
    final_norm: bool
    bias: bool  # biases on W_q/W_k/W_v/W_o
    ff_bias: bool
    left_out: tuple[str, ...]  # keys of modules outside the encoder (an output layer on top)
    notes: tuple[str, ...]

    @property
    def head_choices(self) -> tuple[int, ...]:
        """Every number of heads this width allows (d_model % n_heads == 0)."""
        return tuple(h for h in range(1, self.d_model + 1) if self.d_model % h == 0)


def find_prefix(state: Mapping[str, Any]) -> str | None:
    """The prefix before the post's names (``""``, ``"encoder."``, …), or None when these are not its names."""
    hits = sorted(key[: -len(ANCHOR)] for key in state if key.endswith(ANCHOR))
    return hits[0] if hits else None


def is_post_state(state: Mapping[str, Any]) -> bool:
    return find_prefix(state) is not None


def _shape(state: Mapping[str, Any], key: str) -> tuple[int, ...]:
    value = state[key]
    if not isinstance(value, torch.Tensor):
        raise CheckpointError(f"{key} is not a tensor")
    return tuple(value.shape)


def _expected(prefix: str, n_layers: int, bias: bool, ff_bias: bool, final: bool) -> list[str]:
    keys = [f"{prefix}embedding.weight"]
    for i in range(n_layers):
        for name in LAYER_MAP:
            keys.append(f"{prefix}layers.{i}.{name}.weight")
            if (name.startswith("attn.") and bias) or (name.startswith("ff.") and ff_bias) or "norm" in name:
                keys.append(f"{prefix}layers.{i}.{name}.bias")
    if final:
        keys += [f"{prefix}norm.weight", f"{prefix}norm.bias"]
    return keys


def listed(keys: list[str], limit: int = 8) -> str:
    return ", ".join(keys[:limit]) + (f" … ({len(keys)} in all)" if len(keys) > limit else "")


def read_layout(state: Mapping[str, Any]) -> PostLayout:
    """Every size and choice a post-style state dict tells. Raises CheckpointError naming the keys that do not
    fit the post's encoder and the ones it expected."""
    prefix = find_prefix(state)
    if prefix is None:
        raise CheckpointError(f"these are not the post's names: no {ANCHOR}")
    p = prefix
    if f"{p}embedding.weight" not in state:
        raise CheckpointError(f"the post's encoder has {p}embedding.weight; this state dict has none")
    vocab_size, d_model = _shape(state, f"{p}embedding.weight")
    layer_ids = sorted(
        {
            int(k[len(p) + 7 :].split(".", 1)[0])
            for k in state
            if k.startswith(f"{p}layers.") and k[len(p) + 7 :].split(".", 1)[0].isdigit()
        }
    )
    n_layers = len(layer_ids)
    if layer_ids != list(range(n_layers)):
        raise CheckpointError(f"the layers are numbered {layer_ids}; expected 0 … {n_layers - 1} without gaps")
    ff_key = f"{p}layers.0.ff.0.weight"
    if ff_key not in state:
        raise CheckpointError(f"the post's encoder has {ff_key} (the first feed-forward Linear); it is missing")
    d_ff = _shape(state, ff_key)[0]
    bias = f"{p}layers.0.attn.W_q.bias" in state
    ff_bias = f"{p}layers.0.ff.0.bias" in state
    final = f"{p}norm.weight" in state
    notes: list[str] = []

    table, positional, max_len = None, "sinusoidal", POST_DEFAULT_MAX_LEN
    for name in ("pos_enc.pe", *LEARNED_TABLES):
        if f"{p}{name}" in state:
            table = f"{p}{name}"
            shape = _shape(state, table)
            rows = shape[-2] if len(shape) >= 2 else 0
            if len(shape) not in (2, 3) or shape[-1] != d_model or (len(shape) == 3 and shape[0] != 1):
                raise CheckpointError(f"{table} has shape {shape}; expected (1, max_seq_len, {d_model})")
            max_len = rows
            flat = state[table].reshape(rows, d_model).float()  # (L, d_model)
            if name != "pos_enc.pe":
                positional = "learned"
            elif d_model % 2 or (flat - sinusoidal_table(rows, d_model)).abs().max() > max(
                SINUSOID_TOLERANCE,
                float(torch.finfo(state[table].dtype).eps),  # |values| ≤ 1: eps/2 is the rounding
            ):
                positional = "learned"
                notes.append(f"{table} is not the sinusoidal table, so it is used as a learned table")
            break
    if table is None:
        notes.append(
            f"the file stores no position table (pos_enc.pe): the sinusoidal formula is used, for up to "
            f"{max_len} tokens"
        )
    if not final:
        notes.append("there is no final LayerNorm (norm.weight): the last block's output is the model's output")

    expected = _expected(p, n_layers, bias, ff_bias, final) + ([table] if table else [])
    inside = [k for k in state if k.startswith(p) and k[len(p) :].startswith(_ENCODER_MODULES)]
    unexpected = sorted(set(inside) - set(expected))
    missing = [k for k in expected if k not in state]
    if unexpected or missing:
        parts = []
        if unexpected:
            parts.append(f"unexpected keys: {listed(unexpected)}")
        if missing:
            parts.append(f"missing keys: {listed(missing)}")
        raise CheckpointError(
            "this looks like the post's encoder but does not fit it — "
            + "; ".join(parts)
            + ". Expected, per layer: "
            + ", ".join(f"layers.{{i}}.{n}.weight" for n in LAYER_MAP)
            + " (with ff.0/ff.3/norm1/norm2 biases), embedding.weight, pos_enc.pe and norm.weight/bias"
        )
    left_out = tuple(sorted(k for k in state if k not in expected and k not in inside))
    for key in expected:
        if key.endswith(".weight") and "norm" not in key.rsplit(".", 2)[-2] and key != table:
            _check_linear(state, key, p, d_model, d_ff, vocab_size)
    return PostLayout(
        p,
        vocab_size,
        d_model,
        n_layers,
        d_ff,
        max_len,
        positional,
        table,
        final,
        bias,
        ff_bias,
        left_out,
        tuple(notes),
    )


def _check_linear(state: Mapping[str, Any], key: str, p: str, d: int, f: int, v: int) -> None:
    name = key[len(p) :]
    want = {"embedding.weight": (v, d)}.get(name)
    if want is None:
        want = (f, d) if ".ff.0." in name else (d, f) if ".ff.3." in name else (d, d)
    if _shape(state, key) != want:
        raise CheckpointError(f"{key} has shape {_shape(state, key)}; the post's encoder has {want} there")


def heads_from_hint(hint: Mapping[str, Any]) -> int | None:
    """A number of heads a reader stored beside the weights (config.json, metadata, a .pt's config dict)."""
    for name in ("n_heads", "num_heads", "heads", "nhead", "num_attention_heads"):
        value = hint.get(name)
        if isinstance(value, str) and value.strip().isdigit():
            value = int(value)
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return value
    return None


def norm_from_hint(hint: Mapping[str, Any]) -> str | None:
    """The block order a reader stored ("norm": "pre"/"post", or a norm_first / pre_norm / post_norm flag)."""
    value = hint.get("norm")
    if value in ("pre", "post"):
        return value
    for name, pre in (("norm_first", True), ("pre_norm", True), ("post_norm", False)):
        flag = hint.get(name)
        if isinstance(flag, bool):
            return "pre" if flag == pre else "post"
    return None
