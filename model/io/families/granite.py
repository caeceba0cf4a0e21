"""Granite folders (``model_type: granite``): LLaMA with four multipliers — token embeddings × embedding_multiplier,
each sublayer's output × residual_multiplier as it joins the stream, q·k × attention_multiplier instead of 1/√d_k,
and the logits ÷ logits_scaling."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from model.config import TransformerConfig
from model.errors import CheckpointError
from model.io.families.llama import _head, llama_config, loader


def _positive(raw: Mapping[str, Any], key: str, default: float) -> float:
    value = raw.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0:
        raise CheckpointError(f"config.json's {key} must be a positive number, got {value!r}")
    return float(value)


def granite_config(raw: Mapping[str, Any], own_head: bool = False) -> TransformerConfig:
    return llama_config(
        raw,
        embed_multiplier=_positive(raw, "embedding_multiplier", 1.0),
        residual_multiplier=_positive(raw, "residual_multiplier", 1.0),
        attn_scale=_positive(raw, "attention_multiplier", 1.0),
        logit_divisor=_positive(raw, "logits_scaling", 1.0),
        tie_lm_head=not own_head,
    )


def _family(cfg: TransformerConfig) -> str:
    return (
        f"Granite (LLaMA with multipliers: embeddings × {cfg.embed_multiplier:g}, sublayer outputs × "
        f"{cfg.residual_multiplier:g}, q·k × {cfg.attn_scale:g}, logits ÷ {cfg.logit_divisor:g}; {_head(cfg)})"
    )


load = loader(lambda src, own: granite_config(src.raw, own), _family, tied_by_default=True)
