"""What sliding-window layers (Mistral, Gemma's local layers, ModernBERT) add to the captions of the views that
draw attention: the window, read back from the drawn pattern."""

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
