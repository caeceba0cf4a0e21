"""Phi-3 folders (``model_type: phi3``): LLaMA's blocks with Q, K and V fused in one ``qkv_proj`` (queries, then
keys, then values) and the gate and up projections fused in ``gate_up_proj`` (gate first), both split here; a
sliding window over every layer when ``sliding_window`` is set; partial rotary when the config asks."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import torch

from model.config import TransformerConfig
from model.io.families.common import build
from model.io.families.llama import llama_config, map_llama_weights
from model.io.state import LoadedModel


def unfuse(hf: dict[str, torch.Tensor], cfg: TransformerConfig) -> dict[str, torch.Tensor]:
    """Phi-3's fused projections as LLaMA's separate ones."""
    out = dict(hf)
    q, kv = cfg.n_heads * cfg.d_k, cfg.kv_heads * cfg.d_k
    for i in range(cfg.n_layers):
        p = f"model.layers.{i}."
        qkv = out.pop(f"{p}self_attn.qkv_proj.weight", None)  # (q + 2 kv, d_model)
        if qkv is not None and qkv.size(0) == q + 2 * kv:
            out[f"{p}self_attn.q_proj.weight"], out[f"{p}self_attn.k_proj.weight"] = qkv[:q], qkv[q : q + kv]
            out[f"{p}self_attn.v_proj.weight"] = qkv[q + kv :]
        elif qkv is not None:
            out[f"{p}self_attn.qkv_proj.weight"] = qkv  # the wrong size: named as unexpected
        gate_up = out.pop(f"{p}mlp.gate_up_proj.weight", None)  # (2 d_ff, d_model)
        if gate_up is not None and gate_up.size(0) == 2 * cfg.d_ff:
            out[f"{p}mlp.gate_proj.weight"], out[f"{p}mlp.up_proj.weight"] = gate_up[: cfg.d_ff], gate_up[cfg.d_ff :]
        elif gate_up is not None:
            out[f"{p}mlp.gate_up_proj.weight"] = gate_up
    return map_llama_weights(out, cfg)


def load(folder: Path, raw: Mapping[str, Any]) -> LoadedModel:
    params = raw.get("rope_parameters") or {}
    factor = (
        params.get("partial_rotary_factor", raw.get("partial_rotary_factor", 1.0)) if isinstance(params, dict) else 1.0
    )
    cfg = llama_config(raw, window=raw.get("sliding_window"))
    if factor != 1.0:
        cfg = cfg.replace(rotary_dim=int(cfg.d_k * factor))
    window = f", sliding window {cfg.sliding_window}" if cfg.sliding_window else ""
    return build(folder, raw, cfg, unfuse, f"Phi-3 (LLaMA with fused QKV and gate/up{window})")
