"""How alike heads attend: Jensen–Shannon distances between patterns, and an order that groups similar heads."""

from __future__ import annotations

import numpy as np


def js_distance_matrix(patterns: np.ndarray) -> np.ndarray:
    """Jensen–Shannon distance between every pair of heads, averaged over query rows.

    patterns: (K, N, M) — K heads flattened from (L, H), each row a distribution over M keys.
    Returns (K, K) float32, symmetric, zero diagonal, in [0, sqrt(ln 2)] (natural log).
    """
    p = np.asarray(patterns, dtype=np.float32)
    logp = np.log(np.maximum(p, 1e-30))
    plogp = np.where(p > 0, p * logp, 0.0).sum(-1)  # (K, N): the heads' own -entropies
    k = p.shape[0]
    out = np.zeros((k, k))
    for i in range(k):  # one head against all: memory K*N*M, not K*K*N*M
        mid = 0.5 * (p[i : i + 1] + p)  # (K, N, M)
        mlogm = np.where(mid > 0, mid * np.log(np.maximum(mid, 1e-30)), 0.0).sum(-1)  # (K, N)
        # JS = ½ KL(a‖m) + ½ KL(b‖m) = ½ Σ a log a + ½ Σ b log b − Σ m log m
        out[i] = (0.5 * (plogp[i : i + 1] + plogp) - mlogm).mean(-1)
    out = 0.5 * (out + out.T)
    np.fill_diagonal(out, 0.0)
    return np.sqrt(np.maximum(out, 0.0)).astype(np.float32)


def renormalised_rows(patterns: np.ndarray) -> np.ndarray:
    """Rows rescaled to sum to 1 (patterns with some key columns cut, e.g. hidden special tokens, are no
    longer distributions; JS distance needs them to be). A row with no mass left becomes uniform. (..., M)."""
    p = np.asarray(patterns, dtype=np.float32)
    total = p.sum(-1, keepdims=True)
    uniform = np.full_like(p, 1.0 / max(p.shape[-1], 1))
    return np.where(total > 1e-12, p / np.maximum(total, 1e-12), uniform)


def head_similarity(patterns: np.ndarray, max_rows: int = 128) -> tuple[np.ndarray, list[tuple[int, int]]]:
    """JS distance between every pair of heads of (L, H, N, M) patterns: ((L*H, L*H), [(layer, head), ...]).

    Rows are renormalised to sum to 1 first (see renormalised_rows). Long inputs compare an evenly spaced
    subset of at most ``max_rows`` query rows (keys are all kept). A head with NaN or Inf weights gets NaN
    distances (its row and column, diagonal included): it is not computable, not identical to other such heads.
    """
    p = np.asarray(patterns)
    L, H, n, m = p.shape
    rows = np.unique(np.linspace(0, n - 1, min(n, max_rows)).round().astype(int))
    sampled = p[:, :, rows].reshape(L * H, len(rows), m)  # (K, r, M)
    broken = ~np.isfinite(sampled).all(axis=(1, 2))  # (K,): NaN/Inf weights compare with nothing
    flat = renormalised_rows(np.where(broken[:, None, None], 0.0, sampled))  # broken heads: uniform, then blanked
    dist = js_distance_matrix(flat)
    dist[broken, :] = np.nan
    dist[:, broken] = np.nan
    return dist, [(i, j) for i in range(L) for j in range(H)]


def cluster_order(distance: np.ndarray) -> np.ndarray:
    """Leaf order of average-linkage clustering (optimal ordering): similar heads end up adjacent; heads with
    NaN distances (not computable) come last."""
    from scipy.cluster.hierarchy import leaves_list, linkage
    from scipy.spatial.distance import squareform

    d = np.asarray(distance, dtype=np.float64)
    if d.ndim != 2 or d.shape[0] != d.shape[1]:
        raise ValueError(f"distance must be a square matrix, got shape {d.shape}")
    broken = np.isnan(d).all(0) if d.size else np.zeros(0, dtype=bool)  # not computable: ordered last
    good = np.flatnonzero(~broken)
    if len(good) < 3:
        return np.concatenate([good, np.flatnonzero(broken)])
    d = d[np.ix_(good, good)]
    d = 0.5 * (d + d.T)
    np.fill_diagonal(d, 0.0)
    order = good[leaves_list(linkage(squareform(d, checks=False), method="average", optimal_ordering=True))]
    return np.concatenate([order, np.flatnonzero(broken)])
