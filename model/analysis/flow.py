"""Across layers: attention rollout and attention flow (Abnar & Zuidema, 2020).

patterns: (L, H, N, N), each layer's head-mean mixed with the identity for the residual stream.
"""

from __future__ import annotations

import numpy as np


def row_shares(m: np.ndarray) -> np.ndarray:
    """Each row divided by its sum, float32; a row with nothing in it stays zero. (..., N, M)."""
    m = np.asarray(m, dtype=np.float64)
    return (m / np.maximum(m.sum(-1, keepdims=True), 1e-12)).astype(np.float32)


def aggregate(per_layer: np.ndarray) -> np.ndarray:
    """Rollout-style product through the layers: (L, N, N) -> (L, N, N), entry l = C_l … C_0 (rows
    renormalised first). Row i of entry l says how much of token i after layer l comes from each input token."""
    c = row_shares(per_layer).astype(np.float64)
    out, acc = np.empty_like(c), np.eye(c.shape[-1])
    for layer in range(len(c)):
        acc = c[layer] @ acc
        out[layer] = acc
    return out.astype(np.float32)


def rollout_layers(patterns: np.ndarray, residual: float = 0.5) -> np.ndarray:
    """Rollout after every layer: (L, H, N, N) -> (L, N, N); entry l = Â_l … Â_0, where Â is the head-mean
    mixed with the identity (the residual stream), rows renormalised. Row i of entry l: how much of token i after
    layer l comes from each input token — Abnar & Zuidema's per-layer figures are one row of each entry."""
    p = np.asarray(patterns, dtype=np.float64).mean(1)  # (L, N, N)
    return aggregate(residual * np.eye(p.shape[-1]) + (1 - residual) * p)


def attention_rollout(patterns: np.ndarray, residual: float = 0.5) -> np.ndarray:
    """Abnar & Zuidema's rollout. patterns: (L, H, N, N) -> (N, N) from last-layer tokens to inputs.

    Each layer's head-mean is mixed with the identity (the residual stream), rows renormalised, then
    the layers are multiplied: R = Â_L … Â_1.
    """
    return rollout_layers(patterns, residual)[-1]


MAX_FLOW_TOKENS = 32


def _flow_graph(patterns: np.ndarray, residual: float, max_tokens: int):
    """The layered capacity graph: node layer·N + i is token i before layer ``layer`` (0 = the inputs)."""
    from scipy.sparse import csr_matrix

    p = np.asarray(patterns, dtype=np.float64).mean(1)
    L, n, _ = p.shape
    if n > max_tokens:
        raise ValueError(f"attention flow is limited to {max_tokens} tokens (this text has {n}); use rollout")
    rows, cols, caps = [], [], []
    for layer in range(L):
        a = residual * np.eye(n) + (1 - residual) * p[layer]
        a = a / np.maximum(a.sum(-1, keepdims=True), 1e-12)
        i, j = np.nonzero(a > 0)  # node (layer + 1, i) draws from node (layer, j) with capacity a[i, j]
        rows.append((layer + 1) * n + i)
        cols.append(layer * n + j)
        caps.append(np.maximum(1, np.rint(a[i, j] * FLOW_UNIT)).astype(np.int32))
    rows, cols, caps = np.concatenate(rows), np.concatenate(cols), np.concatenate(caps)
    size = (L + 1) * n
    return csr_matrix((caps, (rows, cols)), shape=(size, size)), L, n


FLOW_UNIT = 10**6  # scipy's max-flow needs integer capacities


def _normalised(flow: np.ndarray) -> np.ndarray:
    return (flow / np.maximum(flow.sum(-1, keepdims=True), 1e-12)).astype(np.float32)


def attention_flow(patterns: np.ndarray, residual: float = 0.5, max_tokens: int = MAX_FLOW_TOKENS) -> np.ndarray:
    """Abnar & Zuidema's attention flow: max-flow from each last-layer token to each input token.

    patterns: (L, H, N, N). Capacities are the residual-mixed head-mean weights. Returns (N, N).
    Refuses sequences longer than ``max_tokens`` (N² max-flow problems grow quickly).
    """
    from scipy.sparse.csgraph import maximum_flow

    graph, L, n = _flow_graph(patterns, residual, max_tokens)
    flow = np.zeros((n, n))
    for i in range(n):
        for j in range(n):
            flow[i, j] = maximum_flow(graph, L * n + i, j).flow_value / FLOW_UNIT
    return _normalised(flow)


def flow_from(patterns: np.ndarray, token: int, residual: float = 0.5, max_tokens: int = MAX_FLOW_TOKENS) -> np.ndarray:
    """Attention flow of one token after every layer: (L, H, N, N) -> (L, N), row l = max-flow from token
    ``token`` after layer l to each input token, normalised (Abnar & Zuidema's per-layer flow figures)."""
    from scipy.sparse.csgraph import maximum_flow

    graph, L, n = _flow_graph(patterns, residual, max_tokens)
    if not 0 <= token < n:
        raise ValueError(f"token {token} is outside the text's {n} tokens")
    flow = np.zeros((L, n))
    for layer in range(L):
        for j in range(n):
            flow[layer, j] = maximum_flow(graph, (layer + 1) * n + token, j).flow_value / FLOW_UNIT
    return _normalised(flow)
