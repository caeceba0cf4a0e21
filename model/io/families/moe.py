"""What the mixture-of-experts families share: their experts' tensors gathered from the file into ours — one
(E, f, d) gate and up and one (E, d, f) down per layer (model/moe.py) — whether the file stores one matrix per expert
(Mixtral's w1/w3/w2, Qwen3-MoE's gate/up/down_proj) or all of them in one tensor (gpt-oss)."""

from __future__ import annotations

from collections.abc import Mapping

import torch

from model.config import TransformerConfig
from model.errors import CheckpointError
from model.io.report import Ledger


def stack_experts(
    led: Ledger, cfg: TransformerConfig, layer: int, prefix: str, names: Mapping[str, str]
) -> dict[str, torch.Tensor]:
    """One layer's experts stored one per matrix: ``{prefix}{e}.{names[part]}.weight`` for part gate, up, down."""
    out = {}
    for part, name in names.items():
        keys = [f"{prefix}{e}.{name}.weight" for e in range(cfg.n_experts)]
        missing = [k for k in keys if k not in led]
        if missing:
            raise CheckpointError(f"layer {layer}'s experts lack {missing[0]} (config.json says {cfg.n_experts})")
        out[f"blocks.{layer}.ff.experts.{part}"] = torch.stack([led.take(k) for k in keys])  # (E, f, d) / (E, d, f)
    return out


def router(led: Ledger, layer: int, name: str) -> dict[str, torch.Tensor]:
    """The router's (E, d) weight (and bias) under ``name``."""
    out = {}
    for part in ("weight", "bias"):
        if f"{name}.{part}" in led:
            out[f"blocks.{layer}.ff.router.{part}"] = led.take(f"{name}.{part}")
    return out


def moe_family(cfg: TransformerConfig) -> str:
    """ "4 experts, 2 per token, in 2 of 3 layers" for the family line."""
    layers = sum(cfg.is_moe(i) for i in range(cfg.n_layers))
    where = "in every layer" if layers == cfg.n_layers else f"in {layers} of {cfg.n_layers} layers"
    return f"{cfg.n_experts} experts, {cfg.experts_per_token} per token, {where}"
