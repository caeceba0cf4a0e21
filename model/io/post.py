"""Import the encoder of the post *Attention from scratch* as its readers save it: ``model.state_dict()``.

The post's ``TransformerEncoder`` names its tensors (``d`` = d_model, ``f`` = d_ff, ``L`` = max_seq_len)::

    embedding.weight                            (V, d)
    pos_enc.pe                                  (1, L, d)  a buffer: the sinusoidal table
    layers.{i}.attn.W_q / W_k / W_v / W_o.weight  (d, d)   no biases
    layers.{i}.ff.0.weight, ff.0.bias           (f, d), (f,)   Linear -> GELU -> Dropout -> Linear
    layers.{i}.ff.3.weight, ff.3.bias           (d, f), (d,)
    layers.{i}.norm1 / norm2 .weight, .bias     (d,)
    norm.weight, norm.bias                      (d,)       the final LayerNorm

and computes x = embedding(ids)·√d + pe, pre-norm blocks x + attn(LN1(x)) and x + FF(LN2(x)), then LN(x): our
:class:`TransformerConfig` with its defaults (sinusoidal, pre-norm, exact GELU, no Q/K/V/O biases, FF biases,
embeddings scaled, LayerNorm eps 1e-5). Every size is read from the shapes; the number of heads is not in the
weights, so the caller says it (or a stored hint does). Variants readers make are read too: a prefix from a
wrapper (``encoder.``, ``module.``, ``_orig_mod.``), an output layer on top (left out, and named), learned
positions, no stored table, no final norm, attention biases, post-norm blocks (which only a hint or the user
can tell: the weights are the same).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch

from model.config import TransformerConfig
from model.errors import CheckpointError
from model.io.post_layout import (
    ANCHOR,
    LAYER_MAP,
    NAME_MAP_DOC,
    POST_DEFAULT_HEADS,
    PostLayout,
    find_prefix,
    heads_from_hint,
    is_post_state,
    listed,
    norm_from_hint,
    read_layout,
)
from model.io.state import LoadedModel, build_from_state
from model.io.tokenizer import Tokenizer


def _check_hint_sizes(layout: PostLayout, hint: Mapping[str, Any]) -> None:
    sizes = {
        "vocab_size": layout.vocab_size,
        "d_model": layout.d_model,
        "n_layers": layout.n_layers,
        "d_ff": layout.d_ff,
    }
    if layout.table:
        sizes["max_seq_len"] = layout.max_seq_len
    for name, found in sizes.items():
        stated = hint.get(name)
        if isinstance(stated, int) and not isinstance(stated, bool) and stated != found:
            raise CheckpointError(f"the stored config says {name} {stated}, but the weights have {found}")


def post_config(
    layout: PostLayout, n_heads: int, norm: str = "pre", causal: bool = False, max_seq_len: int | None = None
) -> TransformerConfig:
    """The from-scratch config that computes exactly what the post's encoder with these weights computes."""
    if n_heads < 1 or layout.d_model % n_heads:
        raise CheckpointError(
            f"{n_heads} heads do not divide d_model {layout.d_model}; choose one of "
            f"{', '.join(map(str, layout.head_choices))}"
        )
    try:
        return TransformerConfig(
            vocab_size=layout.vocab_size,
            d_model=layout.d_model,
            n_heads=n_heads,
            n_layers=layout.n_layers,
            d_ff=layout.d_ff,
            max_seq_len=max_seq_len if layout.table is None and max_seq_len else layout.max_seq_len,
            dropout=0.0,
            norm=norm,
            positional=layout.positional,
            activation="gelu",  # nn.GELU(): the exact erf form
            bias=layout.bias,
            ff_bias=layout.ff_bias,
            layer_norm_eps=1e-5,  # nn.LayerNorm's default
            scale_embeddings=True,  # embedding(tokens) * embedding_dim ** 0.5
            final_layer_norm=layout.final_norm,
            causal=causal,
            pad_token_id=0,
        )
    except ValueError as exc:
        raise CheckpointError(f"the post's encoder with these sizes cannot be built: {exc}") from None


def map_post_weights(state: Mapping[str, torch.Tensor], layout: PostLayout) -> dict[str, torch.Tensor]:
    """The post's tensors under this project's names (the output layer on top and the sinusoidal table left
    out: the table is not a parameter of ours)."""
    p = layout.prefix
    out = {"tok_emb.weight": state[f"{p}embedding.weight"]}
    if layout.positional == "learned":
        out["pos_enc.embedding.weight"] = state[layout.table].reshape(layout.max_seq_len, layout.d_model)
    for i in range(layout.n_layers):
        for src, dst in LAYER_MAP.items():
            for part in ("weight", "bias"):
                key = f"{p}layers.{i}.{src}.{part}"
                if key in state:
                    out[f"blocks.{i}.{dst}.{part}"] = state[key]
    if layout.final_norm:
        out["ln_f.weight"], out["ln_f.bias"] = state[f"{p}norm.weight"], state[f"{p}norm.bias"]
    return out


def load_post_state(
    state: Mapping[str, torch.Tensor],
    *,
    n_heads: int | None = None,
    norm: str | None = None,
    hint: Mapping[str, Any] | None = None,
    tokenizer: Tokenizer | None = None,
    info: dict | None = None,
) -> LoadedModel:
    """A :class:`LoadedModel` from the post's state dict. ``n_heads``/``norm`` win over the ``hint`` (a
    config a reader stored beside the weights); without either the post's defaults (8 heads, pre-norm) are
    used and a warning says so."""
    layout = read_layout(state)
    hint = dict(hint or {})
    _check_hint_sizes(layout, hint)
    warnings = list(layout.notes)
    stored = heads_from_hint(hint)
    heads = n_heads or stored
    if heads is None:
        if layout.d_model % POST_DEFAULT_HEADS:
            raise CheckpointError(
                f"the number of heads is not stored in the weights; say it (one of "
                f"{', '.join(map(str, layout.head_choices))}): sidebar 'Heads', load_checkpoint(path, n_heads=…) "
                f"or --heads"
            )
        heads = POST_DEFAULT_HEADS
        warnings.append(
            f"The number of heads is not stored in the weights: {heads} (the post's default) is assumed. If the "
            f"model was built with another n_heads, choose it (sidebar 'Heads', load_checkpoint(path, n_heads=…), "
            f"--heads); every other number is read from the weights."
        )
    block = norm or norm_from_hint(hint) or "pre"
    causal = hint.get("causal") is True
    hint_len = hint.get("max_seq_len") if isinstance(hint.get("max_seq_len"), int) else None
    cfg = post_config(layout, heads, block, causal, hint_len)
    if layout.left_out:
        warnings.append(
            f"Left out {len(layout.left_out)} tensor(s) outside the encoder (an output layer on top): "
            f"{listed(list(layout.left_out), 4)}. The dashboard shows the encoder; its output is the final "
            "hidden state."
        )
    how = "as chosen" if n_heads else "stored with the weights" if stored else "assumed: the post's default"
    family = f"the post's TransformerEncoder: {heads} heads ({how}), {block}-norm blocks"
    meta = {"model_type": "attention-from-scratch", "family": family, **(info or {})}
    loaded = build_from_state(cfg, map_post_weights(state, layout), tokenizer, meta)
    if layout.positional == "sinusoidal" and layout.table is not None:
        table = state[layout.table].reshape(layout.max_seq_len, layout.d_model)  # (L, d_model)
        mine = loaded.model.pos_enc.table  # (max(L, SINUSOIDAL_MIN_LEN), d_model): later rows from the formula
        with torch.no_grad():  # the reader's own float32 table, so positions agree bit for bit
            mine[: len(table)].copy_(table.to(mine.dtype))
    loaded.warnings[:0] = warnings
    what = "outside the post's encoder (an output layer on top, whose meaning the file does not say); the pages show "
    loaded.report.left_out = {k: what + "the encoder's final hidden state" for k in layout.left_out}
    return loaded


def from_module(module: torch.nn.Module, n_heads: int | None = None, norm: str | None = None) -> LoadedModel:
    """Convert a live instance of the post's ``TransformerEncoder`` (read, never changed). ``n_heads`` defaults
    to the module's own ``layers[0].attn.n_heads``."""
    state = {k: v.detach().cpu() for k, v in module.state_dict().items()}
    if not is_post_state(state):
        raise CheckpointError(
            f"this {type(module).__name__} does not have the post's parameter names ({ANCHOR}, …); "
            f"the names Attention Lab reads are: {NAME_MAP_DOC}"
        )
    if n_heads is None:
        prefix = find_prefix(state) or ""
        owner = module.get_submodule(f"{prefix}layers.0.attn")
        value = getattr(owner, "n_heads", None)
        n_heads = value if isinstance(value, int) else None
    return load_post_state(state, n_heads=n_heads, norm=norm, info={"name": type(module).__name__})
