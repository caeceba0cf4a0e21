"""What layers of their own kind add to the views that draw attention: sliding-window layers (Mistral, Gemma's local
layers, ModernBERT) their window, read back from the drawn pattern; NoPE layers (SmolLM3) that they see no
positions."""

from __future__ import annotations

import numpy as np


def window_caption(layer: int, window_size: int, pattern, causal: bool) -> str:
    """What a sliding-window layer's drawn pattern shows: how many keys its queries see at most. pattern (N, N)."""
    p = np.asarray(pattern)
    seen = int((p > 0).sum(-1).max()) if p.size else 0
    reach = f"its {window_size} latest keys (itself included)" if causal else f"keys up to {window_size // 2} away"
    return (
        f"Layer {layer} attends through a sliding window: each query sees only {reach}; here the widest row "
        f"reaches {seen} of {p.shape[-1]} keys. The cells outside the window are masked, as the causal mask's are."
    )


def layer_labels(cfg) -> list[str]:
    """One label per layer: "L3", "L1 w6" (a sliding window of 6 keys), "L3 NoPE" (no RoPE: no positions)."""
    return [
        f"L{i}" + (f" w{cfg.sliding_window}" if cfg.is_sliding(i) else "") + (" NoPE" if i in cfg.nope_layers else "")
        for i in range(cfg.n_layers)
    ]


def layer_kinds(cfg) -> str:
    """The overview title's key to those labels ("" when every layer is alike)."""
    keys = []
    if "sliding" in cfg.layer_types:
        keys.append(f"w{cfg.sliding_window}: a sliding window of {cfg.sliding_window}")
    if cfg.nope_layers:
        keys.append("NoPE: no positions, RoPE skipped")
    return f" ({'; '.join(keys)})" if keys else ""
