"""Mistral folders (``model_type: mistral``): LLaMA with a sliding window — each query sees only the
``sliding_window`` latest keys, itself included."""

from __future__ import annotations

from model.io.families.llama import _head, llama_config, loader


def _family(cfg) -> str:
    window = f"sliding window {cfg.sliding_window}" if cfg.sliding_window else "no sliding window"
    return f"Mistral (LLaMA with a {window}; {_head(cfg)})"


load = loader(
    lambda src, own: llama_config(src.raw, window=src.raw.get("sliding_window"), tie_lm_head=not own), _family
)
