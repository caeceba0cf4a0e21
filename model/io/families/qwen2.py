"""Qwen2 folders (``model_type: qwen2``): LLaMA with biases on W_q, W_k and W_v (none on W_o), and sliding
layers when ``use_sliding_window`` is on (named per layer in ``layer_types``)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from model.io.families.common import build
from model.io.families.llama import llama_config, map_llama_weights
from model.io.state import LoadedModel


def load(folder: Path, raw: Mapping[str, Any]) -> LoadedModel:
    window = raw.get("sliding_window") if raw.get("use_sliding_window") else None
    cfg = llama_config(raw, window=window, bias=True, o_bias=False)
    return build(folder, raw, cfg, map_llama_weights, "Qwen2 (LLaMA with Q/K/V biases)")
