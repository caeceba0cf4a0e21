"""Qwen2 folders (``model_type: qwen2``): LLaMA with biases on W_q, W_k and W_v (none on W_o), and sliding
layers when ``use_sliding_window`` is on (named per layer in ``layer_types``)."""

from __future__ import annotations

from model.io.families.llama import _head, llama_config, loader


def _config(src, own):
    window = src.raw.get("sliding_window") if src.raw.get("use_sliding_window") else None
    return llama_config(src.raw, window=window, bias=True, o_bias=False, tie_lm_head=not own)


load = loader(_config, lambda cfg: f"Qwen2 (LLaMA with Q/K/V biases; {_head(cfg)})")
