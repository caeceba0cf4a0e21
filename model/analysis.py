"""Attention maths used by the dashboard and the model card; torch in, torch out, no UI.

Pattern arrays are (..., N, M) with rows summing to 1 (or 0 for fully-masked rows).
"""

from __future__ import annotations

import torch

METRICS = ("entropy", "mean_distance", "self", "previous", "next", "special", "max_weight")


def _valid_rows(pattern: torch.Tensor, query_mask: torch.Tensor | None) -> torch.Tensor:
    n = pattern.size(-2)
    rows = pattern.sum(-1) > 0.5  # (..., N): rows that attend somewhere
    if query_mask is not None:
        rows = rows & query_mask.to(torch.bool).reshape(*(1,) * (rows.dim() - 1), n)
    return rows


def _row_mean(values: torch.Tensor, rows: torch.Tensor) -> torch.Tensor:
    rows = rows.to(values.dtype)
    return (values * rows).sum(-1) / rows.sum(-1).clamp_min(1.0)


def diagonal_mass(pattern: torch.Tensor, offset: int) -> torch.Tensor:
    """Weight on key i + offset for each query i: (..., N). Rows with no such key get 0."""
    n, m = pattern.shape[-2:]
    out = torch.zeros(pattern.shape[:-1], dtype=pattern.dtype)
    q = torch.arange(n)
    k = q + offset
    ok = (k >= 0) & (k < m)
    out[..., q[ok]] = pattern[..., q[ok], k[ok]]
    return out


def head_metrics(
    pattern: torch.Tensor, special: torch.Tensor | None = None, query_mask: torch.Tensor | None = None
) -> dict[str, torch.Tensor]:
    """Per-head summary statistics, averaged over query rows.

    pattern: (L, H, N, N) or (H, N, N); special: (N,) bool marks special tokens ([CLS], [SEP]);
    query_mask: (N,) bool, rows to average over (default: every row that attends somewhere).
    Returns {metric: tensor of shape pattern.shape[:-2]} for each name in METRICS:
    entropy (nats), mean |i - j| distance, mass on self / previous / next / special tokens, max weight.
    """
    p = pattern.float()
    n = p.size(-1)
    rows = _valid_rows(p, query_mask)
    logp = p.clamp_min(1e-30).log_()  # p = 0 contributes 0·(−69) = 0
    idx = torch.arange(n, dtype=p.dtype)
    dist = (idx[:, None] - idx[None, :]).abs()  # (N, N)
    out = {
        "entropy": _row_mean(-torch.einsum("...i,...i->...", p, logp), rows),
        "mean_distance": _row_mean(torch.einsum("...ij,ij->...i", p, dist), rows),
        "self": _row_mean(diagonal_mass(p, 0), rows),
        "previous": _row_mean(diagonal_mass(p, -1), rows),
        "next": _row_mean(diagonal_mass(p, 1), rows),
        "max_weight": _row_mean(p.amax(-1), rows),
    }
    if special is not None:
        out["special"] = _row_mean(p @ special.to(p.dtype), rows)
    else:
        out["special"] = torch.zeros_like(out["self"])
    return {k: out[k].float() for k in METRICS}


def js_distance_matrix(patterns: torch.Tensor, rows: torch.Tensor | None = None) -> torch.Tensor:
    """Jensen–Shannon distance between every pair of heads.

    patterns: (K, N, M) — K heads flattened from (L, H). rows: (N,) bool rows to compare.
    Returns (K, K), symmetric, zero diagonal, in [0, sqrt(ln 2)] (natural log).
    """
    p = patterns.float()
    if rows is not None:
        p = p[:, rows.to(torch.bool)]
    logp = torch.log(p.clamp_min(1e-30))
    k = p.size(0)
    out = torch.zeros(k, k)
    for i in range(k):  # one head against all: memory K*N*M, not K*K*N*M
        a, la = p[i : i + 1], logp[i : i + 1]  # (1, N, M)
        mid = 0.5 * (a + p)  # (K, N, M)
        lmid = torch.log(mid.clamp_min(1e-30))
        kl_a = torch.where(a > 0, a * (la - lmid), 0.0).sum(-1)  # (K, N)
        kl_b = torch.where(p > 0, p * (logp - lmid), 0.0).sum(-1)
        out[i] = (0.5 * (kl_a + kl_b)).mean(-1)
    out = 0.5 * (out + out.t())
    out.fill_diagonal_(0.0)
    return out.clamp_min(0).sqrt()


def entropy(pattern: torch.Tensor) -> torch.Tensor:
    """Row entropy in nats: (..., N, M) -> (..., N)."""
    p = pattern.double()
    return -torch.special.xlogy(p, p).sum(-1)
