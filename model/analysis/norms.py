"""Norm-based measures: what a token really contributes, and how much an output changed."""

from __future__ import annotations

import numpy as np


def value_contributions(pattern: np.ndarray, v: np.ndarray, w_o: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Norm-based attribution (Kobayashi et al., 2020): α_ij · ‖v_j W_o^h‖.

    pattern: (N, M); v: (M, d_k); w_o: (d_k, d_model). Returns (contributions (N, M), value norms (M,)).
    """
    norms = np.linalg.norm(v.astype(np.float64) @ w_o.astype(np.float64), axis=-1)  # (M,)
    return (pattern * norms[None, :]).astype(np.float32), norms.astype(np.float32)


def relative_change(before: np.ndarray, after: np.ndarray) -> np.ndarray:
    """‖after_i − before_i‖ / ‖before_i‖ per row: (N, d) × 2 -> (N,). How much each token's vector moved."""
    before = np.asarray(before)
    return np.linalg.norm(np.asarray(after) - before, axis=-1) / np.maximum(np.linalg.norm(before, axis=-1), 1e-12)
