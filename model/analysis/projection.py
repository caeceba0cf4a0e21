"""Projections of vectors to a plane for display."""

from __future__ import annotations

import numpy as np


def pca_2d(points: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Project (P, D) points onto their first two principal components.

    Returns (coords (P, 2), explained variance ratio (2,)). Signs are fixed so the largest loading is
    positive (deterministic output).
    """
    x = np.asarray(points, dtype=np.float64)
    x = x - x.mean(0, keepdims=True)
    if x.shape[0] < 2:
        return np.zeros((x.shape[0], 2)), np.zeros(2)
    _, s, vt = np.linalg.svd(x, full_matrices=False)
    comps = vt[:2]
    signs = np.sign(comps[np.arange(len(comps)), np.abs(comps).argmax(1)])
    comps = comps * signs[:, None]
    coords = x @ comps.T
    var = s**2
    ratio = var[:2] / max(var.sum(), 1e-300)
    if coords.shape[1] < 2:
        coords = np.pad(coords, ((0, 0), (0, 2 - coords.shape[1])))
        ratio = np.pad(ratio, (0, 2 - len(ratio)))
    return coords, ratio


def align_keys(q: np.ndarray, k: np.ndarray) -> tuple[np.ndarray, np.ndarray, float]:
    """Bring queries and keys into one cloud without changing any attention weight (after AttentionViz).

    Queries × c and keys ÷ c, with c chosen so both clouds have the same mean distance from their centre (c
    cancels in q·k); then the keys are shifted so their centre is the queries' (q·(k + t) = q·k + q·t adds the
    same amount to all of a query's scores, which softmax ignores). q, k: (N, d). Returns (q', k', c)."""
    q = np.asarray(q, dtype=np.float64)
    k = np.asarray(k, dtype=np.float64)
    sq = np.linalg.norm(q - q.mean(0), axis=1).mean()
    sk = np.linalg.norm(k - k.mean(0), axis=1).mean()
    c = float(np.sqrt(sk / sq)) if sq > 1e-12 and sk > 1e-12 else 1.0
    q_out, k_scaled = q * c, k / c
    return q_out, k_scaled + (q_out.mean(0) - k_scaled.mean(0)), c
