"""Attention of a long input without its N × N patterns: any head's weights from the captured q and k, a block of
query rows at a time, reduced on the spot to what a page draws and measures.

A row block's scores are q[rows] · kᵀ over only the keys its mask lets those rows see (causal: the keys up to the
block's last row, so half the work), its weights exp(score − logsumexp), exactly what the explicit softmax gives.
Everything kept is small: block sums on a grid of ``width``-token cells, each row's logsumexp (so any later cell,
row or column is exact at the cost of a dot product), the weight each key receives, the head metrics and relation
shares accumulated over their rows, and a few sampled rows pooled into the grid's columns.

Shapes: H heads of a layer, H_kv key/value heads, N tokens, d_k head width, R rows in a block, C keys it sees,
B grid cells per side (ceil(N / width)).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch

from model.analysis.rows import OFFSETS, Rule, Tokens, offset_name, pair_mass, row_sets, visible_rows

#: floats held by one row block's weights (H × R × C): 8 MB in float32. In a server several threads run torch, and
#: its OpenMP threads then sleep between operations instead of spinning: half as many blocks summarise a SmolLM2
#: layer at 8,192 tokens in 1.67 s, not 1.85–2.02 s (4 MB blocks; 1.32 s in a process where one thread runs torch)
BLOCK_CELLS = 1 << 21
#: what is averaged over rows, each with its own rows (as model.analysis.metrics and kinds define them)
ROW_STATS = (
    "entropy", "mean_distance", "self", "previous", "next", "special", "max_weight",  # head metrics
    "[CLS]", "[SEP]", "punctuation", "position 0",  # sink shares
    "same token", "same word",  # Find heads' relations
    "broad",  # entropy over log(visible keys)
    *(offset_name(k) for k in OFFSETS),  # the head types' "positional" (model.analysis.sinks.head_types)
)  # fmt: skip
#: every offset a row statistic reads, −8 … +8: one gather per block for all of them
SPAN = max(abs(k) for k in OFFSETS)


def grid_width(n: int, cells: int) -> int:
    """Tokens per grid cell so that N tokens fit in at most ``cells`` cells a side."""
    return max(1, math.ceil(n / max(cells, 1)))


def block_rows(n_heads: int, keys: int) -> int:
    """Query rows per block so that one block's weights (H × R × C) stay in a core's cache: cached passes over
    them run about 5 × faster than passes over a block that spills to memory (measured on 2 cores)."""
    return max(1, min(1024, BLOCK_CELLS // max(n_heads * keys, 1)))


def scores_block(q: torch.Tensor, k: torch.Tensor, rule: Rule, r0: int, lo: int) -> torch.Tensor:
    """q (H, R, d_k) of rows r0…, k (H_kv, C, d_k) of keys lo… -> scaled scores (H, R, C), −inf where blocked.
    Query head h reads key/value head h // (H / H_kv), without repeating k."""
    H, R, d = q.shape
    kv, C = k.shape[0], k.shape[1]
    s = torch.bmm(q.reshape(kv, H // kv * R, d), k.transpose(1, 2))  # (H_kv, G·R, C): one product per K/V head
    s = s.view(H, R, C).mul_(rule.factor)  # (H, R, C), query head h = kv · G + g
    if rule.softcap:
        s = s.div_(rule.softcap).tanh_().mul_(rule.softcap)
    for a, b in bands(rule, r0, R, lo, C):
        blocked = rule.blocked(torch.arange(r0, r0 + R), torch.arange(lo + a, lo + b))
        if blocked is not None:
            s[..., a:b].masked_fill_(blocked, float("-inf"))
    return s


def bands(rule: Rule, r0: int, rows: int, lo: int, cols: int) -> list[tuple[int, int]]:
    """Column slices of a block (rows r0…, keys lo… lo + cols) where the mask may block a cell: outside the keys
    every row sees (each row's first and last visible key only grow with the row), so the rest is never touched.
    A causal block's band is its last rows × rows columns, not the whole block."""
    end = lo + cols
    first_hi = rule.keys(r0, r0 + 1, end)[1]  # the first row's last visible key + 1
    last_lo = rule.keys(r0 + rows - 1, r0 + rows, end)[0]  # the last row's first visible key
    left, right = (0, max(0, min(cols, last_lo - lo))), (min(cols, max(0, first_hi - lo)), cols)
    return [band for band in (left, right) if band[1] > band[0]]


def weights(q: np.ndarray, k: np.ndarray, rule: Rule, rows: tuple[int, int], cols: tuple[int, int]) -> np.ndarray:
    """Exact weights (H, R, C) of query rows [a, b) on keys [c, d) of one layer (q (H, N, d_k), k (H_kv, N, d_k)):
    each row's logsumexp over every key it sees, then exp(score − logsumexp) on the asked keys only."""
    (a, b), (c, d) = rows, cols
    n = q.shape[1]
    qt, kt = torch.from_numpy(np.ascontiguousarray(q[:, a:b])), torch.from_numpy(k)
    lo, hi = rule.keys(a, b, n)
    lse = torch.logsumexp(scores_block(qt, kt[:, lo:hi], rule, a, lo), -1, keepdim=True)  # (H, R, 1)
    s = scores_block(qt, kt[:, c:d], rule, a, c)  # (H, R, C)
    return torch.exp(s - lse).nan_to_num_(0.0).numpy()  # a row blocked everywhere: 0, as masked_softmax


def weights_at(
    q: np.ndarray, k: np.ndarray, rule: Rule, lse: np.ndarray, rows, keys, total: bool = False
) -> np.ndarray:
    """(H, R, K) exact weights of any query rows on any keys of one layer (q (H, N, d_k), k (H_kv, N, d_k), lse
    (H, N) each row's logsumexp from the layer's summary), a product over those cells only, rows a block at a
    time; ``total``: (H, R) their sum over the keys instead (a column check over every row stays small)."""
    H, kv = q.shape[0], k.shape[0]
    rows, keys = np.asarray(rows, dtype=np.int64), np.asarray(keys, dtype=np.int64)
    kt = torch.from_numpy(np.ascontiguousarray(k[:, keys])).transpose(1, 2)  # (H_kv, d_k, K)
    out = np.empty((H, len(rows)) if total else (H, len(rows), len(keys)), dtype=np.float32)
    step = max(1, BLOCK_CELLS // max(H * len(keys), 1))
    for a in range(0, len(rows), step):
        r = rows[a : a + step]
        qt = torch.from_numpy(np.ascontiguousarray(q[:, r]))  # (H, R, d_k)
        s = torch.bmm(qt.reshape(kv, -1, qt.shape[-1]), kt).view(H, len(r), len(keys)).mul_(rule.factor)  # (H, R, K)
        if rule.softcap:
            s = s.div_(rule.softcap).tanh_().mul_(rule.softcap)
        blocked = rule.blocked(torch.from_numpy(r), torch.from_numpy(keys))
        if blocked is not None:
            s.masked_fill_(blocked, float("-inf"))
        w = torch.exp(s - torch.from_numpy(lse[:, r])[..., None]).nan_to_num_(0.0)
        out[:, a : a + len(r)] = (w.sum(-1) if total else w).numpy()
    return out


@dataclass
class LayerSummary:
    """One layer's heads, summarised. grid: (H, B, B) float64 sums of weights per cell; lse: (H, N) float32;
    received: (H, N) float32 weight each key gets from every query together; stats: {name: (H,)} row means
    (ROW_STATS, NaN where a text has no row for it); samples: (H, S, B) sampled rows pooled into grid columns."""

    grid: np.ndarray
    lse: np.ndarray
    received: np.ndarray
    stats: dict[str, np.ndarray]
    samples: np.ndarray


def summarise_layer(
    q: np.ndarray,
    k: np.ndarray,
    rule: Rule,
    tokens: Tokens,
    width: int,
    sample_rows: np.ndarray,
    cancel: Callable[[], bool] | None = None,
    relations: dict[str, tuple[np.ndarray, np.ndarray]] | None = None,
) -> LayerSummary:
    """Stream one layer (q (H, N, d_k), k (H_kv, N, d_k), float32) block of rows by block of rows.
    ``relations``: tokens.pairs(...) of "same token" and "same word" when already made (they are the text's)."""
    H, n, _ = q.shape
    B = math.ceil(n / width)
    qt, kt = torch.from_numpy(q), torch.from_numpy(k)
    grid = torch.zeros(H, B, B, dtype=torch.float64)
    lse_all = torch.empty(H, n)
    received = torch.zeros(H, n, dtype=torch.float64)
    sums = torch.zeros(len(ROW_STATS), H, dtype=torch.float64)
    samples = torch.zeros(H, len(sample_rows), B)
    rows_of = row_sets(tokens, rule, n)
    which = torch.stack([rows_of[name] for name in ROW_STATS]).float()  # (K, N)
    counts = which.sum(-1)  # (K,) rows per statistic
    cells = torch.arange(n) // width  # (N,) grid cell of each token
    relations = relations or {name: tokens.pairs(name) for name in ("same token", "same word")}
    columns_of = {  # key columns whose weight is a share: (positions, name)
        name: torch.from_numpy(np.flatnonzero(mask))
        for name, mask in (("special", tokens.special), ("[CLS]", tokens.cls), ("[SEP]", tokens.sep))
    }
    punctuation = torch.from_numpy(tokens.punctuation.astype(np.float32))
    positions = torch.arange(n, dtype=torch.float32)
    r0 = 0
    while r0 < n:
        if cancel is not None and cancel():
            raise Cancelled
        lo, hi = rule.keys(r0, min(n, r0 + 1), n)
        r1 = min(n, r0 + block_rows(H, max(hi - lo, r0 + 1 - lo)))
        lo, hi = rule.keys(r0, r1, n)
        s = scores_block(qt[:, r0:r1], kt[:, lo:hi], rule, r0, lo)  # (H, R, C)
        top = s.amax(-1, keepdim=True)  # (H, R, 1)
        t = s.sub_(top)  # scores less each row's largest, in place
        e = t.exp()
        z = e.sum(-1, keepdim=True)  # (H, R, 1)
        lse = (top + z.log())[..., 0]  # (H, R)
        lse_all[:, r0:r1] = lse
        for a, b in bands(rule, r0, r1 - r0, lo, hi - lo):  # −∞ · 0 would be NaN below: blocked cells count 0
            t[..., a:b].nan_to_num_(0.0, neginf=0.0)
        # entropy −Σ p log p = log z − Σ e·t / z, with no log of the weights
        entropy = z[..., 0].log() - torch.linalg.vecdot(e, t) / z[..., 0]
        p = e.div_(z)  # (H, R, C) the weights
        rows = torch.arange(r0, r1)
        flat = p.view(-1, hi - lo)  # (H·R, C)
        diagonals = _diagonals(p, rows - lo, SPAN)  # (H, R, 2·SPAN + 1): weight on key row + k, k = −SPAN…
        row = {
            "entropy": entropy,
            "max_weight": z[..., 0].reciprocal(),  # the largest weight: exp(top − lse) = 1 / z
            "self": diagonals[..., SPAN],
            "previous": diagonals[..., SPAN - 1],
            "next": diagonals[..., SPAN + 1],
            **{offset_name(k): diagonals[..., SPAN + k] for k in OFFSETS},
            "punctuation": torch.mv(flat, punctuation[lo:hi]).view(H, -1),
            "position 0": p[..., 0] if lo == 0 else torch.zeros(H, r1 - r0),
        }
        near = torch.mv(flat, positions[lo:hi]).view(H, -1)  # Σ_j p_ij j
        row["mean_distance"] = rows * 1.0 - near if rule.causal else _distance(p, rows, lo)
        for name, cols in columns_of.items():
            inside = cols[(cols >= lo) & (cols < hi)] - lo
            row[name] = p.index_select(-1, inside).sum(-1) if len(inside) else torch.zeros(H, r1 - r0)
        for name, (qi, ki) in relations.items():
            row[name] = pair_mass(p, qi, ki, r0, r1, lo, hi, rule)
        row["broad"] = row["entropy"] / torch.log(visible_rows(rule, rows, n).clamp_min(2).double()).float()
        values = torch.stack([row[name] for name in ROW_STATS])  # (K, H, R)
        chosen = which[:, r0:r1]  # (K, R): the rows each statistic averages over
        sums += (values * chosen[:, None]).sum(-1, dtype=torch.float64)  # (K, H)
        binned = _pool_columns(p, lo, width, B)  # (H, R, B)
        grid.index_add_(1, cells[r0:r1], binned.double())
        received[:, lo:hi] += p.sum(1)
        picked = np.flatnonzero((sample_rows >= r0) & (sample_rows < r1))
        if len(picked):
            samples[:, picked] = binned[:, torch.from_numpy(sample_rows[picked] - r0)]
        r0 = r1
    stats = {name: (sums[i] / counts[i]).float().numpy() if counts[i] else np.full(H, np.nan, "f4")
             for i, name in enumerate(ROW_STATS)}  # fmt: skip
    return LayerSummary(grid.numpy(), lse_all.numpy(), received.float().numpy(), stats, samples.numpy())


def head_grid(q: np.ndarray, k: np.ndarray, rule: Rule, width: int, how: str = "max") -> np.ndarray:
    """(B, B) of one head (q (N, d_k), k (N, d_k)), streamed when asked for, so the summary of every head does not
    pay for it: ``how="max"`` each grid cell's largest weight; ``"without first"`` each cell's sum of the weights
    with key 0 taken away and every row rescaled to sum to 1 (a sink removed, as a view)."""
    n = q.shape[0]
    B = math.ceil(n / width)
    qt, kt = torch.from_numpy(q)[None], torch.from_numpy(k)[None]
    cells = torch.arange(n) // width
    out = torch.zeros(1, B, B, dtype=torch.float64 if how != "max" else torch.float32)
    r0 = 0
    while r0 < n:
        lo, hi = rule.keys(r0, r0 + 1, n)
        r1 = min(n, r0 + block_rows(1, max(hi - lo, r0 + 1 - lo)))
        lo, hi = rule.keys(r0, r1, n)
        p = torch.softmax(scores_block(qt[:, r0:r1], kt[:, lo:hi], rule, r0, lo), -1).nan_to_num_(0.0)  # (1, R, C)
        if how == "max":
            index = cells[r0:r1][None, :, None].expand(1, -1, B)
            out.scatter_reduce_(1, index, _pool_columns(p, lo, width, B, "amax"), "amax")
        else:
            if lo == 0:
                rest = 1.0 - p[..., :1]  # (1, R, 1): what is left once key 0 is gone
                p[..., 0] = 0.0
                p = torch.where(rest > 1e-12, p / rest.clamp_min(1e-12), torch.zeros_like(p))
            out.index_add_(1, cells[r0:r1], _pool_columns(p, lo, width, B).double())
        r0 = r1
    return out[0].numpy()


class Cancelled(Exception):  # noqa: N818 — a request, not a failure
    """The caller asked the streaming pass to stop."""


def _diagonals(p: torch.Tensor, at: torch.Tensor, span: int) -> torch.Tensor:
    """(H, R, 2·span + 1): weight on key row + k for k = −span … span (``at``: each row's own column in p); 0
    where there is no such key in the block (outside the text, or a key the mask hides: its weight is 0 anyway)."""
    col = at[:, None] + torch.arange(-span, span + 1)  # (R, 2·span + 1)
    ok = (col >= 0) & (col < p.shape[-1])
    index = col.clamp(0, p.shape[-1] - 1).expand(p.shape[0], -1, -1)  # (H, R, 2·span + 1)
    return p.gather(-1, index) * ok


def _distance(p: torch.Tensor, rows: torch.Tensor, lo: int) -> torch.Tensor:
    """(H, R): Σ_j p_ij |i − j| (a causal row sees j ≤ i only: the caller takes i − Σ p_ij j instead)."""
    j = torch.arange(lo, lo + p.shape[-1], dtype=p.dtype)
    return (p * (rows[:, None].to(p.dtype) - j[None]).abs_()).sum(-1)


def _pool_columns(p: torch.Tensor, lo: int, width: int, cells: int, how: str = "sum") -> torch.Tensor:
    """(H, R, C) weights of keys lo… -> (H, R, B) sums (``how="amax"``: maxima) per grid column (cells of
    ``width`` keys from key 0), with no copy of p: whole cells as a view, the ragged ends apart."""
    H, R, C = p.shape
    hi = lo + C
    out = torch.zeros(H, R, cells)
    a0, a1 = -(-lo // width) * width, hi // width * width  # the whole cells inside [lo, hi)
    if a1 <= a0:  # no whole cell: [lo, hi) lies inside one or two cells
        for c in range(lo // width, (hi - 1) // width + 1):
            x0, x1 = max(lo, c * width), min(hi, (c + 1) * width)
            out[..., c] = getattr(p[..., x0 - lo : x1 - lo], how)(-1)
        return out
    out[..., a0 // width : a1 // width] = getattr(p[..., a0 - lo : a1 - lo].unflatten(-1, (-1, width)), how)(-1)
    if a0 > lo:
        out[..., lo // width] = getattr(p[..., : a0 - lo], how)(-1)
    if hi > a1:
        out[..., a1 // width] = getattr(p[..., a1 - lo :], how)(-1)
    return out


def visible_cells(rule: Rule, n: int, width: int) -> np.ndarray:
    """(B, B) float64: how many (query, key) cells of each grid cell the mask lets through."""
    B = math.ceil(n / width)
    out = torch.zeros(1, B, B, dtype=torch.float64)
    cells = torch.arange(n) // width
    step = max(1, BLOCK_CELLS * 8 // n)
    for r0 in range(0, n, step):
        r1 = min(n, r0 + step)
        blocked = rule.blocked(torch.arange(r0, r1), torch.arange(n))
        seen = torch.ones(1, r1 - r0, n) if blocked is None else (~blocked).float()[None]  # (1, R, N)
        out.index_add_(1, cells[r0:r1], _pool_columns(seen, 0, width, B).double())
    return out[0].numpy()
