"""Mistral folders (``model_type: mistral``): LLaMA with a sliding window — each query sees only the
``sliding_window`` latest keys, itself included."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from model.io.families.common import build
from model.io.families.llama import llama_config, map_llama_weights
from model.io.state import LoadedModel


def load(folder: Path, raw: Mapping[str, Any]) -> LoadedModel:
    cfg = llama_config(raw, window=raw.get("sliding_window"))
    window = f"sliding window {cfg.sliding_window}" if cfg.sliding_window else "no sliding window"
    return build(folder, raw, cfg, map_llama_weights, f"Mistral (LLaMA with a {window})")
