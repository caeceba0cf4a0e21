"""What each GGUF architecture adds to the LLaMA layout the importer starts from (:mod:`model.io.gguf`): Gemma 3's
config, Phi-3's fused tensors split, and the family line the sidebar shows."""

from __future__ import annotations

from typing import Any

import torch

from model.config import TransformerConfig

GEMMA_SWA_PATTERN = 6  # llama.cpp's Gemma 3: every 6th layer global, the others a sliding window


def gemma3_fields(d_model: int, n_heads: int, d_k: int, n_layers: int, window: int) -> dict[str, Any]:
    """What a gemma3 GGUF implies beyond LLaMA, as llama.cpp runs it: sandwich norms (stored as 1 + w, so no
    offset here), QK-norm, GeGLU, embeddings × √d_model, 1/√d_k attention (the 27B: 1/√(d_model / H)), sliding
    layers but every sixth, with RoPE base 10,000 on them."""
    scale = (d_model / n_heads if n_layers == 62 else d_k) ** -0.5
    pattern = tuple("global" if (i + 1) % GEMMA_SWA_PATTERN == 0 else "sliding" for i in range(n_layers))
    return {
        "sandwich_norm": True,
        "activation": "geglu_tanh",
        "scale_embeddings": True,
        "attn_scale": scale,
        "rope_local_base": 10_000.0,
        "layer_types": pattern if window else (),
    }


def unfused(key: str, tensor: torch.Tensor, cfg: TransformerConfig) -> dict[str, torch.Tensor]:
    """phi3 stores Q, K, V as one ``attn_qkv`` (queries, keys, values) and gate + up as one ``ffn_up`` (gate
    first): split them. Anything else passes as it is."""
    q, kv = cfg.n_heads * cfg.d_k, cfg.kv_heads * cfg.d_k
    if key.startswith("blk.") and key.endswith(".attn_qkv.weight") and tensor.size(0) == q + 2 * kv:
        b = f"blocks.{key.split('.')[1]}.attn"
        return {
            f"{b}.w_q.weight": tensor[:q],
            f"{b}.w_k.weight": tensor[q : q + kv],
            f"{b}.w_v.weight": tensor[q + kv :],
        }
    if key.endswith("ff.fc1.weight") and cfg.gated and tensor.size(0) == 2 * cfg.d_ff:
        return {key.replace("ff.fc1", "ff.gate"): tensor[: cfg.d_ff], key: tensor[cfg.d_ff :]}
    return {key: tensor}


_ARCH_NAMES = {
    "llama": "LLaMA",
    "qwen2": "Qwen2 (Q/K/V biases)",
    "qwen3": "Qwen3 (QK-norm)",
    "phi3": "Phi-3 (fused QKV and gate/up)",
    "gemma3": "Gemma 3 (sandwich norms, QK-norm, GeGLU)",
}


def family(arch: str, cfg: TransformerConfig) -> str:
    sliding = cfg.layer_types.count("sliding")
    window = f"; {sliding} of {cfg.n_layers} layers sliding (window {cfg.sliding_window})" if sliding else ""
    return f"{_ARCH_NAMES.get(arch, arch)} from GGUF{window}{'' if cfg.tie_lm_head else '; untied output head'}"
