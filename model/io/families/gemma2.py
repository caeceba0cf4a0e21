"""Gemma 2 folders (``model_type: gemma2``): Gemma 3's block without its QK-norm — sandwich norms, RMSNorm scaling by
(1 + w), GeGLU with tanh GELU, embeddings × √d_model, q·k scaled by query_pre_attn_scalar^-½, sliding and global
layers taking turns (``layer_types``) under one RoPE base — and soft-capping twice: every attention score becomes
c·tanh(s / c) before the mask (``attn_logit_softcapping``), the logits too (``final_logit_softcapping``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from model.config import TransformerConfig
from model.errors import CheckpointError
from model.io.families.common import layer_types, need
from model.io.families.gemma3 import LAYER_MAP
from model.io.families.llama import _head, llama_config, loader, map_llama_weights


def gemma2_config(raw: Mapping[str, Any], own_head: bool = False) -> TransformerConfig:
    act = raw.get("hidden_activation", raw.get("hidden_act", "gelu_pytorch_tanh"))
    if act not in ("gelu_pytorch_tanh", "gelu"):
        raise CheckpointError(f"hidden_activation {act!r}: Gemma uses GeGLU (gelu_pytorch_tanh)")
    n_layers = need(raw, "num_hidden_layers")
    types, window = layer_types(raw, n_layers, raw.get("sliding_window"))
    caps = {}
    for key, field in (("attn_logit_softcapping", "attn_softcap"), ("final_logit_softcapping", "logit_softcap")):
        value = raw.get(key)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int | float) or value < 0):
            raise CheckpointError(f"config.json's {key} must be a non-negative number, got {value!r}")
        caps[field] = float(value or 0.0)
    base = {k: v for k, v in raw.items() if k not in ("hidden_act", "layer_types", "sliding_window")}
    return llama_config(
        {**base, "hidden_act": "silu"},  # the gate's activation is set below
        activation="geglu_tanh" if act == "gelu_pytorch_tanh" else "geglu",
        sandwich_norm=True,
        norm_offset=1.0,
        scale_embeddings=True,
        attn_scale=float(need(raw, "query_pre_attn_scalar", float)) ** -0.5,
        layer_types=types,
        sliding_window=window,
        tie_lm_head=not own_head,
        **caps,
    )


def _family(cfg: TransformerConfig) -> str:
    pattern = f"{cfg.layer_types.count('sliding')} of {cfg.n_layers} layers sliding (window {cfg.sliding_window})"
    caps = f"scores capped at ±{cfg.attn_softcap:g}" if cfg.attn_softcap else "no score cap"
    return f"Gemma 2 (sandwich norms, GeGLU, {caps}; {pattern}; {_head(cfg)})"


load = loader(
    lambda src, own: gemma2_config(src.raw, own),
    _family,
    tied_by_default=True,
    weights=lambda led, cfg: map_llama_weights(led, cfg, LAYER_MAP),
)
