"""Across layers: attention rollout and attention flow (Abnar & Zuidema, 2020).

patterns: (L, H, N, N), each layer's head-mean mixed with the identity for the residual stream.
"""

from __future__ import annotations

import numpy as np


def attention_rollout(patterns: np.ndarray, residual: float = 0.5) -> np.ndarray:
    """Abnar & Zuidema's rollout. patterns: (L, H, N, N) -> (N, N) from last-layer tokens to inputs.

    Each layer's head-mean is mixed with the identity (the residual stream), rows renormalised, then
    the layers are multiplied: R = Â_L … Â_1.
    """
    p = np.asarray(patterns, dtype=np.float64).mean(1)  # (L, N, N)
    n = p.shape[-1]
    rollout = np.eye(n)
    for layer in p:
        a = residual * np.eye(n) + (1 - residual) * layer
        a = a / np.maximum(a.sum(-1, keepdims=True), 1e-12)
        rollout = a @ rollout
    return rollout.astype(np.float32)


MAX_FLOW_TOKENS = 32


def attention_flow(patterns: np.ndarray, residual: float = 0.5, max_tokens: int = MAX_FLOW_TOKENS) -> np.ndarray:
    """Abnar & Zuidema's attention flow: max-flow from each last-layer token to each input token.

    patterns: (L, H, N, N). Capacities are the residual-mixed head-mean weights. Returns (N, N).
    Refuses sequences longer than ``max_tokens`` (N² max-flow problems grow quickly).
    """
    from scipy.sparse import csr_matrix
    from scipy.sparse.csgraph import maximum_flow

    p = np.asarray(patterns, dtype=np.float64).mean(1)
    L, n, _ = p.shape
    if n > max_tokens:
        raise ValueError(f"attention flow is limited to {max_tokens} tokens (this text has {n}); use rollout")
    unit = 10**6  # scipy's max-flow needs integer capacities
    rows, cols, caps = [], [], []
    for layer in range(L):
        a = residual * np.eye(n) + (1 - residual) * p[layer]
        a = a / np.maximum(a.sum(-1, keepdims=True), 1e-12)
        i, j = np.nonzero(a > 0)  # node (layer + 1, i) draws from node (layer, j) with capacity a[i, j]
        rows.append((layer + 1) * n + i)
        cols.append(layer * n + j)
        caps.append(np.maximum(1, np.rint(a[i, j] * unit)).astype(np.int32))
    rows, cols, caps = np.concatenate(rows), np.concatenate(cols), np.concatenate(caps)
    size = (L + 1) * n
    graph = csr_matrix((caps, (rows, cols)), shape=(size, size))
    flow = np.zeros((n, n))
    for i in range(n):
        for j in range(n):
            flow[i, j] = maximum_flow(graph, L * n + i, j).flow_value / unit
    return (flow / np.maximum(flow.sum(-1, keepdims=True), 1e-12)).astype(np.float32)
