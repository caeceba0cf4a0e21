"""SmolLM3 folders (``model_type: smollm3``): LLaMA with NoPE layers — ``no_rope_layers`` holds a 1 for each
layer whose q and k are rotated and a 0 for each that gets no positions at all (by default every fourth layer, as
``no_rope_layer_interval`` says); sliding layers only when ``use_sliding_window`` is on."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from model.config import TransformerConfig
from model.errors import CheckpointError
from model.io.families.common import need
from model.io.families.llama import _head, llama_config, loader


def nope_layers(raw: Mapping[str, Any]) -> tuple[int, ...]:
    """The layers without RoPE, from ``no_rope_layers`` (1 = RoPE, 0 = none) or its default interval."""
    n = need(raw, "num_hidden_layers")
    flags = raw.get("no_rope_layers")
    if flags is None:
        every = raw.get("no_rope_layer_interval", 4)
        if isinstance(every, bool) or not isinstance(every, int) or every < 1:
            raise CheckpointError(f"config.json's no_rope_layer_interval must be a positive integer, got {every!r}")
        flags = [int((i + 1) % every != 0) for i in range(n)]
    if not isinstance(flags, list) or len(flags) != n or any(f not in (0, 1) or isinstance(f, float) for f in flags):
        raise CheckpointError(f"config.json's no_rope_layers must hold a 0 or 1 for each of the {n} layers")
    return tuple(i for i, f in enumerate(flags) if not f)


def smollm3_config(raw: Mapping[str, Any], own_head: bool = False) -> TransformerConfig:
    sliding = bool(raw.get("use_sliding_window"))
    base = raw if sliding else {k: v for k, v in raw.items() if k != "layer_types"}  # off: no layer slides
    window = raw.get("sliding_window") if sliding else None
    return llama_config(base, window=window, nope_layers=nope_layers(raw), tie_lm_head=not own_head)


def _family(cfg: TransformerConfig) -> str:
    nope = ", ".join(map(str, cfg.nope_layers)) or "none"
    return f"SmolLM3 (LLaMA with NoPE layers — no positions in layer {nope}; {_head(cfg)})"


load = loader(lambda src, own: smollm3_config(src.raw, own), _family, tied_by_default=True)
