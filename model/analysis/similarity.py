"""How alike heads attend: Jensen–Shannon distances between patterns, and an order that groups similar heads."""

from __future__ import annotations

import numpy as np
import torch

BLOCK_ELEMENTS = 1 << 22  # cells of the mixture formed at once (16 MB of float32)
ROW_GROUP = 4  # query rows cropped together to the last key any head of them gives weight to


def js_distance_matrix(patterns: np.ndarray) -> np.ndarray:
    """Jensen–Shannon distance between every pair of heads, averaged over query rows.

    patterns: (K, N, M) — K heads flattened from (L, H), each row a distribution over M keys.
    Returns (K, K) float32, symmetric, zero diagonal, in [0, sqrt(ln 2)] (natural log).

    JS = ½ Σ a log a + ½ Σ b log b − Σ m log m with m = ½(a + b): the heads' own entropies once, the mixture's
    for each pair j ≥ i only (the matrix is symmetric), in torch (float32 cells, float64 sums); rows are taken
    in groups cropped to the last key with any weight (a causal pattern's upper triangle is never formed).
    """
    t = torch.from_numpy(np.ascontiguousarray(patterns, dtype=np.float32))  # (K, N, M)
    k, n, _ = t.shape
    total = torch.zeros(k, k, dtype=torch.float64)
    for g0 in range(0, n, ROW_GROUP):
        group = t[:, g0 : g0 + ROW_GROUP]  # (K, g, M)
        used = torch.nonzero(group.reshape(-1, group.shape[-1]).any(0))
        group = group[..., : int(used.max()) + 1 if len(used) else 1].contiguous()  # (K, g, M_g)
        own = torch.xlogy(group, group).sum(-1, dtype=torch.float64)  # (K, g): Σ a log a per row
        step = max(1, BLOCK_ELEMENTS // max(1, k * group[0].numel()))
        for i0 in range(0, k, step):
            i1 = min(k, i0 + step)
            mid = (group[i0:i1, None] + group[None, i0:]).mul_(0.5)  # (B, K - i0, g, M_g)
            mlogm = torch.xlogy(mid, mid).sum(-1, dtype=torch.float64)  # (B, K - i0, g)
            total[i0:i1, i0:] += (0.5 * (own[i0:i1, None] + own[None, i0:]) - mlogm).sum(-1)
    upper = torch.triu(total, 1) / max(n, 1)
    out = (upper + upper.T).clamp_min(0).sqrt()
    return out.numpy().astype(np.float32)


def renormalised_rows(patterns: np.ndarray) -> np.ndarray:
    """Rows rescaled to sum to 1 (patterns with some key columns cut, e.g. hidden special tokens, are no
    longer distributions; JS distance needs them to be). A row with no mass left becomes uniform. (..., M)."""
    p = np.asarray(patterns, dtype=np.float32)
    total = p.sum(-1, keepdims=True)
    uniform = np.full_like(p, 1.0 / max(p.shape[-1], 1))
    return np.where(total > 1e-12, p / np.maximum(total, 1e-12), uniform)


#: cells of mixtures (pairs × rows × keys) one comparison may form: ≈ 1.2 s on 2 cores (≈ 130 M cells/s)
CELL_BUDGET = 150_000_000
CELLS_PER_SECOND = 130_000_000  # measured on the project's 2-core box (bench/RESULTS.md, "Head similarity")
MIN_ROWS = 16


def similarity_rows(n_heads: int, n_rows: int, n_keys: int, causal: bool, max_rows: int = 128) -> int:
    """How many evenly spaced query rows head similarity compares: every row up to ``max_rows``, fewer when
    the pairs × rows × keys would pass CELL_BUDGET (at 512 tokens: SmolLM2's 270 heads 16 rows, MiniLM's 72
    heads 111), never below MIN_ROWS. A causal pattern's rows use half the keys on average."""
    pairs = n_heads * (n_heads + 1) / 2
    keys = n_keys / 2 if causal else n_keys
    fit = int(CELL_BUDGET / max(pairs * keys, 1))
    return min(n_rows, max_rows, max(MIN_ROWS, fit))


def similarity_seconds(n_heads: int, n_rows: int, n_keys: int, causal: bool) -> float:
    """About how long :func:`head_similarity` takes on a 2-core CPU for (L·H, N, M) patterns, clustering
    included (the page says so before it starts one that takes long). The first call also imports scipy's
    clustering, ≈ 0.7 s; that is added while it is not imported yet."""
    import sys

    rows = similarity_rows(n_heads, n_rows, n_keys, causal)
    cells = n_heads * (n_heads + 1) / 2 * rows * (n_keys / 2 if causal else n_keys)
    return cells / CELLS_PER_SECOND + (0.0 if "scipy.cluster.hierarchy" in sys.modules else 0.7)


def head_similarity(
    patterns: np.ndarray, max_rows: int = 128, causal: bool | None = None
) -> tuple[np.ndarray, list[tuple[int, int]]]:
    """JS distance between every pair of heads of (L, H, N, M) patterns: ((L*H, L*H), [(layer, head), ...]).

    Rows are renormalised to sum to 1 first (see renormalised_rows). Long inputs compare an evenly spaced
    subset of :func:`similarity_rows` query rows (keys are all kept; ``causal`` None: read from the patterns).
    A head with NaN or Inf weights gets NaN distances (its row and column, diagonal included): it is not
    computable, not identical to other such heads.
    """
    p = np.asarray(patterns)
    L, H, n, m = p.shape
    if causal is None:
        causal = bool(n > 1 and not np.triu(p[0, 0], 1).any())
    count = similarity_rows(L * H, n, m, causal, max_rows)
    rows = np.unique(np.linspace(0, n - 1, count).round().astype(int))
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
