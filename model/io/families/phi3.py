"""Phi-3 folders (``model_type: phi3``): LLaMA's blocks with Q, K and V fused in one ``qkv_proj`` (queries, then
keys, then values) and the gate and up projections fused in ``gate_up_proj`` (gate first), both split here; a
sliding window over every layer when ``sliding_window`` is set; partial rotary when the config asks."""

from __future__ import annotations

import torch

from model.config import TransformerConfig
from model.io.families.llama import _head, llama_config, loader, map_llama_weights
from model.io.report import Ledger


def unfuse(led: Ledger, cfg: TransformerConfig) -> dict[str, torch.Tensor]:
    """Phi-3's fused projections as LLaMA's separate ones (a fused tensor of the wrong size stays: it is named as
    unexpected), then LLaMA's names."""
    out = {}
    q, kv = cfg.n_heads * cfg.d_k, cfg.kv_heads * cfg.d_k
    for i in range(cfg.n_layers):
        p, b = f"layers.{i}.", f"blocks.{i}."
        qkv = led.peek(f"{p}self_attn.qkv_proj.weight")  # (q + 2 kv, d_model)
        if qkv is not None and qkv.size(0) == q + 2 * kv:
            led.take(f"{p}self_attn.qkv_proj.weight")
            out[f"{b}attn.w_q.weight"], out[f"{b}attn.w_k.weight"] = qkv[:q], qkv[q : q + kv]
            out[f"{b}attn.w_v.weight"] = qkv[q + kv :]
        gate_up = led.peek(f"{p}mlp.gate_up_proj.weight")  # (2 d_ff, d_model)
        if gate_up is not None and gate_up.size(0) == 2 * cfg.d_ff:
            led.take(f"{p}mlp.gate_up_proj.weight")
            out[f"{b}ff.gate.weight"], out[f"{b}ff.fc1.weight"] = gate_up[: cfg.d_ff], gate_up[cfg.d_ff :]
    return {**map_llama_weights(led, cfg), **out}


def _config(src, own) -> TransformerConfig:
    raw = src.raw
    params = raw.get("rope_parameters") or {}
    factor = (
        params.get("partial_rotary_factor", raw.get("partial_rotary_factor", 1.0)) if isinstance(params, dict) else 1.0
    )
    cfg = llama_config(raw, window=raw.get("sliding_window"), tie_lm_head=not own)
    return cfg.replace(rotary_dim=int(cfg.d_k * factor)) if factor != 1.0 else cfg


def _family(cfg: TransformerConfig) -> str:
    window = f", sliding window {cfg.sliding_window}" if cfg.sliding_window else ""
    return f"Phi-3 (LLaMA with fused QKV and gate/up{window}; {_head(cfg)})"


load = loader(_config, _family, weights=unfuse)
