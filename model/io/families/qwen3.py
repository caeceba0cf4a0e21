"""Qwen3 folders (``model_type: qwen3``): LLaMA with QK-norm — an RMSNorm over each head's query and key
(``self_attn.q_norm`` / ``k_norm``, shared by the heads of a layer) before RoPE — and no biases."""

from __future__ import annotations

from model.io.families.llama import LAYER_MAP, _head, llama_config, loader, map_llama_weights

QWEN3_MAP = {**LAYER_MAP, "self_attn.q_norm": "attn.q_norm", "self_attn.k_norm": "attn.k_norm"}


def _config(src, own):
    window = src.raw.get("sliding_window") if src.raw.get("use_sliding_window") else None
    return llama_config(src.raw, window=window, qk_norm=True, tie_lm_head=not own)


load = loader(
    _config,
    lambda cfg: f"Qwen3 (LLaMA with QK-norm; {_head(cfg)})",
    weights=lambda led, cfg: map_llama_weights(led, cfg, QWEN3_MAP),
)
