"""Head statistics of a decoder's cross-attention: how each head reads the source (numpy only).

cross: (L, H, N, S) — each target token's weights over the source's S tokens (rows sum to 1)."""

from __future__ import annotations

import numpy as np

#: name -> what it measures, as Head metrics shows it
CROSS_METRICS = {
    "focus": "mean weight of each target token's strongest source token (1: one source token per row)",
    "spread": "mean entropy of a row over the source, as a share of the most it could be (1: evenly spread)",
    "writes next": "share of target tokens whose strongest source token is the token the target writes next "
    "(copying, as a pointer reads)",
    "monotone": "rank correlation of target position with its strongest source position (1: the target walks "
    "through the source in order, as an alignment does)",
}


def _ranks(x: np.ndarray) -> np.ndarray:
    """Dense ranks (ties share one): equal positions do not pass for an order."""
    return np.unique(x, return_inverse=True)[1].astype(np.float64)


def cross_metrics(cross: np.ndarray, targets: list[str], sources: list[str]) -> dict[str, np.ndarray]:
    """Each of :data:`CROSS_METRICS` per head, (L, H); "writes next" reads the target's tokens (N) and the
    source's (S) as strings; "monotone" is NaN when every row picks the same source token."""
    c = np.asarray(cross, dtype=np.float64)  # (L, H, N, S)
    L, H, N, S = c.shape
    best = c.argmax(-1)  # (L, H, N)
    out = {"focus": c.max(-1).mean(-1)}
    entropy = -(c * np.log(np.clip(c, 1e-12, None))).sum(-1)  # (L, H, N)
    out["spread"] = (entropy / np.log(S)).mean(-1) if S > 1 else np.zeros((L, H))
    if N > 1:
        writes = np.array(
            [[targets[i + 1] == sources[j] for i, j in enumerate(row[:-1])] for row in best.reshape(-1, N)]
        )
        out["writes next"] = writes.reshape(L, H, N - 1).mean(-1)
    else:
        out["writes next"] = np.full((L, H), np.nan)
    position = _ranks(np.arange(N))
    mono = np.full((L, H), np.nan)
    for lay in range(L):
        for hd in range(H):
            r = _ranks(best[lay, hd])
            if N > 2 and r.std() > 0:
                mono[lay, hd] = float(np.corrcoef(position, r)[0, 1])
    out["monotone"] = mono
    return out
