"""A long text's thumbnails without its summary: each head's weights summed over blocks of rows × blocks of keys,
through the fused attention kernel (no N × N matrix) — the values are one-hot key blocks, so each row's output is its
weight in every key block, and the rows are then summed per row block.

About 2.5 × faster than the row-block summary (model/analysis/streaming.py) that every other whole-text page needs
(SmolLM2 at 8,192 tokens: 0.33 s a layer against 0.8 s on 2 cores), so a text's model overview need not wait for it.
Shapes: H heads, H_kv key/value heads, N tokens, d_k head width, t blocks a side.
"""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F

from model.analysis.rows import Rule

#: query rows per call behind a sliding window (its mask is rows × the keys they see, never N × N)
WINDOW_ROWS = 1024


def block_sums(q: np.ndarray, k: np.ndarray, rule: Rule, bounds: np.ndarray) -> np.ndarray:
    """(H, t, t) float64: each head's weights summed over row block a × key block b, blocks [bounds[i],
    bounds[i + 1]) (q (H, N, d_k), k (H_kv, N, d_k) of one layer). Not for a soft cap on the scores (Gemma 2): the
    kernel cannot apply it, the caller streams the summary instead."""
    if rule.softcap:
        raise ValueError("the fused kernel cannot soft-cap scores: stream the layer's summary")
    H, n, d = q.shape
    kv, t = k.shape[0], len(bounds) - 1
    G = H // kv
    block = torch.from_numpy(np.searchsorted(bounds, np.arange(n), side="right") - 1)  # (N,) each token's block
    # one-hot key blocks as the values, padded to d_k columns: the fused kernel needs v as wide as q and k
    values = F.pad(F.one_hot(block, t).float(), (0, max(0, d - t)))  # (N, max(d_k, t))
    sums = torch.zeros(H, t, t, dtype=torch.float64)
    with torch.inference_mode():
        # every head in one call, as (key/value head, its query heads): the kernel splits heads × row blocks over
        # the cores evenly; a call per key/value head (3 of SmolLM2's) left one core a quarter of a head more
        queries = torch.from_numpy(q).view(kv, G, n, d)  # (H_kv, G, N, d_k): query head h reads h // G
        keys = torch.from_numpy(k)[:, None].expand(kv, G, n, d)  # (H_kv, G, N, d_k), no copy
        vals = values[None, None].expand(kv, G, n, values.shape[-1])  # (H_kv, G, N, max(d_k, t)), no copy
        out = _weights_per_block(queries, keys, vals, rule, n)  # (H_kv, G, N, w): each row's weight per block
        for g in range(kv):  # summed per row block one key/value head at a time: a few MB of float64
            sums[g * G : (g + 1) * G].index_add_(1, block, out[g, ..., :t].double())
    return sums.numpy()


def _weights_per_block(queries, keys, values, rule: Rule, n: int) -> torch.Tensor:
    """The fused kernel's output (B, G, N, w) for queries, keys and values (B, G, N, ·); behind a sliding window
    its rows a block at a time, each with the keys its window lets it see (no N × N mask)."""
    if not rule.window:  # one call: the kernel skips what the causal mask hides
        return F.scaled_dot_product_attention(queries, keys, values, is_causal=rule.causal, scale=rule.factor)
    out = torch.empty(*queries.shape[:2], n, values.shape[-1])
    for r0 in range(0, n, WINDOW_ROWS):
        r1 = min(n, r0 + WINDOW_ROWS)
        lo, hi = rule.keys(r0, r1, n)
        seen = ~rule.blocked(torch.arange(r0, r1), torch.arange(lo, hi))  # (R, C)
        out[:, :, r0:r1] = F.scaled_dot_product_attention(
            queries[:, :, r0:r1], keys[:, :, lo:hi], values[:, :, lo:hi], attn_mask=seen, scale=rule.factor
        )
    return out
