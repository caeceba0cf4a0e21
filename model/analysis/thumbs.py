"""A long text's thumbnails without its summary: each head's weights summed over blocks of rows × blocks of keys,
through the fused attention kernel (no N × N matrix) — the values are one-hot key blocks, so each row's output is its
weight in every key block, and the rows are then summed per row block.

About 2.5 × faster than the row-block summary (model/analysis/streaming.py) that every other whole-text page needs
(SmolLM2 at 8,192 tokens: 0.33 s a layer against 0.8 s on 2 cores), so a text's model overview need not wait for it.
More key blocks than the head is wide (a grid of 160 cells on SmolLM2's 64-wide heads) go through the kernel a group
of key blocks at a time, each call over its own keys only, and each row's share of a group is rescaled by the
group's logsumexp against the row's over all keys: the calls add up to one pass over the keys, not one per group.
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
    sums = torch.zeros(H, t, t, dtype=torch.float64)
    with torch.inference_mode():
        # every head in one call, as (key/value head, its query heads): the kernel splits heads × row blocks over
        # the cores evenly; a call per key/value head (3 of SmolLM2's) left one core a quarter of a head more
        queries = torch.from_numpy(q).view(kv, G, n, d)  # (H_kv, G, N, d_k): query head h reads h // G
        keys = torch.from_numpy(k)[:, None].expand(kv, G, n, d)  # (H_kv, G, N, d_k), no copy
        out = _weights_by_groups(queries, keys, block, bounds, rule)  # (H_kv, G, N, t): one call where t ≤ d_k
        for g in range(kv):  # summed per row block one key/value head at a time: a few MB of float64
            sums[g * G : (g + 1) * G].index_add_(1, block, out[g].double())
    return sums.numpy()


def _weights_by_groups(queries, keys, block: torch.Tensor, bounds: np.ndarray, rule: Rule) -> torch.Tensor:
    """(B, G, N, t) each row's weight in every key block: one-hot key blocks as the values, padded to d_k columns
    (the kernel needs v as wide as q and k), so at most d_k blocks a call. More blocks than that go a group at a
    time, each call over that group's keys alone and giving its rows' logsumexp over them; a row's weights in a
    group are the group's output times exp(the group's logsumexp − the row's over all keys)."""
    B, G, _, d = queries.shape
    t = len(bounds) - 1
    parts, sums = [], []
    for c0 in range(0, t, d):
        c1 = min(t, c0 + d)
        a, b = int(bounds[c0]), int(bounds[c1])
        values = F.pad(F.one_hot(block[a:b] - c0, c1 - c0).float(), (0, d - (c1 - c0)))  # (b − a, d_k)
        out, lse = _over_keys(queries, keys, values[None, None].expand(B, G, b - a, d), rule, a, b)
        parts.append(out[..., : c1 - c0])
        sums.append(lse)
    if len(parts) == 1:  # every key in one call: its output is each row's weights already
        return parts[0]
    total = torch.logsumexp(torch.stack(sums), dim=0)  # (B, G, N): each row's logsumexp over every key
    return torch.cat([out * torch.exp(lse - total)[..., None] for out, lse in zip(parts, sums)], dim=-1)


def _over_keys(queries, keys, values, rule: Rule, a: int, b: int) -> tuple[torch.Tensor, torch.Tensor]:
    """The fused kernel over keys [a, b) only: ((B, G, N, d_k) output, (B, G, N) logsumexp of the scores each row
    sees there; a row that sees none of them: output 0, logsumexp −∞). ``values`` (B, G, b − a, d_k)."""
    B, G, n, d = queries.shape
    kernel = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu  # the public call returns no logsumexp
    if not rule.window:  # causal: rows from a on see these keys, the mask aligned at their common start a
        r0 = a if rule.causal else 0
        o, s = kernel(queries[:, :, r0:], keys[:, :, a:b], values, 0.0, rule.causal, scale=rule.factor)
        if r0 == 0:  # every row sees some of these keys
            return o, s
        return F.pad(o, (0, 0, r0, 0)), F.pad(s, (r0, 0), value=-torch.inf)  # the rows before a: 0, −∞
    out, lse = torch.zeros(B, G, n, d), torch.full((B, G, n), -torch.inf)
    for r0 in range(0, n, WINDOW_ROWS):
        r1 = min(n, r0 + WINDOW_ROWS)
        lo, hi = rule.keys(r0, r1, n)
        lo, hi = max(lo, a), min(hi, b)
        if lo >= hi:
            continue
        blocked = rule.blocked(torch.arange(r0, r1), torch.arange(lo, hi))  # (R, C)
        bias = torch.zeros(blocked.shape).masked_fill_(blocked, -torch.inf)  # the kernel takes no boolean mask
        o, s = kernel(queries[:, :, r0:r1], keys[:, :, lo:hi], values[:, :, lo - a : hi - a], 0.0, False,
                      attn_mask=bias, scale=rule.factor)  # fmt: skip
        sees = ~blocked.all(-1)  # (R,) rows that see some key here (the kernel gives the others 0, not −∞)
        out[:, :, r0:r1] = torch.where(sees[:, None], o, 0.0)
        lse[:, :, r0:r1] = torch.where(sees, s, -torch.inf)
    return out, lse
