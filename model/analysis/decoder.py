"""What decoders' heads do, from their patterns (numpy only): attention sinks, induction, grouped K/V heads.

Shapes: L layers, H heads, N query positions, M key positions.
"""

from __future__ import annotations

import numpy as np

from model.analysis.similarity import js_distance_matrix, renormalised_rows

#: a head is called a sink head when its queries put more than this share of their weight on position 0
SINK_THRESHOLD = 0.5


def sink_mass(patterns: np.ndarray, key: int = 0) -> np.ndarray:
    """Mean weight the queries after ``key`` that can see it put on it: (L, H) from (L, H, N, M).

    Queries at or before ``key`` are left out: in a causal model query 0 can only attend to position 0, so
    counting it would call every head a little sink. So are queries a sliding window keeps from ``key`` (where
    every head's weight on it is 0): they cannot use it (as model.analysis.sinks.sink_shares)."""
    p = np.asarray(patterns, dtype=np.float32)
    if p.ndim != 4:
        raise ValueError(f"patterns must be (L, H, N, M), got shape {p.shape}")
    if p.shape[2] <= key + 1:
        return np.zeros(p.shape[:2], dtype=np.float32)
    given = p[:, :, key + 1 :, key]  # (L, H, R)
    can = (given > 0).any(1)  # (L, R): the queries that can see the key
    can = np.where(can.any(-1, keepdims=True), can, True)
    return (given.sum(-1) / can.sum(-1)[:, None]).astype(np.float32)


def strongest_sink(patterns: np.ndarray) -> tuple[int, int]:
    """(layer, head) putting the most weight on position 0 (:func:`sink_mass`); heads with non-finite weights
    are skipped, and (0, 0) is returned when no head is finite."""
    mass = np.where(np.isfinite(m := sink_mass(patterns)), m, -np.inf)
    layer, head = np.unravel_index(int(np.argmax(mass)), mass.shape)
    return int(layer), int(head)


def induction_scores(patterns: np.ndarray, period: int, start: int = 0) -> np.ndarray:
    """Induction score per head (Olsson et al., 2022) on a sequence that repeats a block of ``period`` tokens
    starting at ``start`` (after a [CLS], say): the mean weight each token of the second copy puts on the token
    right after its earlier occurrence.

    patterns: (L, H, N, N) with N ≥ start + 2·period. Returns (L, H) in [0, 1]; 1 = a perfect induction head."""
    p = np.asarray(patterns, dtype=np.float32)
    if p.ndim != 4 or p.shape[-1] < start + 2 * period or period < 2:
        raise ValueError(f"need (L, H, N, N) patterns with N ≥ start + 2·period, period ≥ 2; got {p.shape}, {period}")
    queries = np.arange(start + period, start + 2 * period)  # every token of the second copy
    targets = queries - period + 1  # the token after its first occurrence
    return p[:, :, queries, targets].mean(-1)


def previous_token_scores(patterns: np.ndarray) -> np.ndarray:
    """Mean weight on the previous token: (L, H). Induction needs one (a head that copies the previous
    token's identity forward) in an earlier layer."""
    p = np.asarray(patterns, dtype=np.float32)
    n = p.shape[-1]
    if n < 2:
        return np.zeros(p.shape[:2], dtype=np.float32)
    q = np.arange(1, n)
    return p[:, :, q, q - 1].mean(-1)


def group_distances(patterns: np.ndarray, group: int, max_rows: int = 96) -> tuple[np.ndarray, np.ndarray]:
    """How alike query heads that share a key/value head attend, per layer, next to heads that do not.

    patterns: (L, H, N, M); group: query heads per K/V head (heads g·group … g·group + group − 1 share one).
    Returns (within (L,), across (L,)): mean Jensen–Shannon distance between pairs of heads of one group, and
    between pairs from different groups (NaN where a layer has no such pair)."""
    p = np.asarray(patterns, dtype=np.float32)
    L, H, n, _ = p.shape
    if group < 1 or H % group:
        raise ValueError(f"group ({group}) must divide the number of heads ({H})")
    rows = np.unique(np.linspace(0, n - 1, min(n, max_rows)).round().astype(int))
    kv = np.arange(H) // group
    same = (kv[:, None] == kv[None, :]) & ~np.eye(H, dtype=bool)
    other = kv[:, None] != kv[None, :]
    within, across = np.full(L, np.nan, np.float32), np.full(L, np.nan, np.float32)
    for layer in range(L):
        d = js_distance_matrix(renormalised_rows(p[layer][:, rows]))  # (H, H)
        if same.any():
            within[layer] = d[same].mean()
        if other.any():
            across[layer] = d[other].mean()
    return within, across
