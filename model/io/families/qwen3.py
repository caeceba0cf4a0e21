"""Qwen3 folders (``model_type: qwen3``): LLaMA with QK-norm — an RMSNorm over each head's query and key
(``self_attn.q_norm`` / ``k_norm``, shared by the heads of a layer) before RoPE — and no biases."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import torch

from model.config import TransformerConfig
from model.io.families.common import build
from model.io.families.llama import llama_config, map_llama_weights
from model.io.state import LoadedModel


def map_qwen3_weights(hf: dict[str, torch.Tensor], cfg: TransformerConfig) -> dict[str, torch.Tensor]:
    out = dict(hf)
    norms = {}
    for i in range(cfg.n_layers):
        for which in ("q_norm", "k_norm"):
            key = f"model.layers.{i}.self_attn.{which}.weight"
            if key in out:
                norms[f"blocks.{i}.attn.{which}.weight"] = out.pop(key)
    return {**map_llama_weights(out, cfg), **norms}


def load(folder: Path, raw: Mapping[str, Any]) -> LoadedModel:
    window = raw.get("sliding_window") if raw.get("use_sliding_window") else None
    cfg = llama_config(raw, window=window, qk_norm=True)
    return build(folder, raw, cfg, map_qwen3_weights, "Qwen3 (LLaMA with QK-norm)")
