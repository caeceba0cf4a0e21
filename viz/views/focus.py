"""The attention map's caption: what the head does for the tokens in focus, from the numbers drawn."""

from __future__ import annotations

import numpy as np

from viz.views.captions import quoted


def focus_caption(tokens: list[str], matrix, query: int, key: int, layer: int, head: int, mode: str = "weights") -> str:
    """One head's map in a sentence. matrix: (N, N) the weights (``mode="weights"``) or scores drawn; ``query``,
    ``key``: positions in focus among the drawn tokens (-1: none)."""
    m = np.asarray(matrix, dtype=np.float64)
    name = f"L{layer}H{head}"
    finite = np.where(np.isfinite(m), m, -np.inf)
    if mode == "scores":
        if query >= 0:
            row = finite[query]
            best = int(np.argmax(row))
            text = f"{name}: query {quoted(tokens[query])} scores highest on {quoted(tokens[best])} ({row[best]:.2f})"
            if key >= 0:
                rank = int((row > row[key]).sum()) + 1
                text += f"; on {quoted(tokens[key])} {row[key]:.2f} (rank {rank} of {np.isfinite(row).sum()})"
            return text + "."
        flat = int(np.argmax(finite))
        q, k = divmod(flat, m.shape[1])
        low = float(np.min(m[np.isfinite(m)]))
        return f"{name}: scores from {low:.2f} to {finite[q, k]:.2f} (“{tokens[q]}” → “{tokens[k]}”)."
    if query >= 0:
        row = np.where(np.isfinite(m[query]), m[query], 0.0)
        top = np.argsort(-row, kind="stable")[:3]
        if key >= 0:
            text = f"{name} gives {row[key]:.0%} of {quoted(tokens[query])}'s attention to {quoted(tokens[key])}"
            rank = int((row > row[key]).sum()) + 1
            text += " (its strongest key)" if rank == 1 else f" (rank {rank} of {len(row)})"
        else:
            text = f"{name}: {quoted(tokens[query])} looks at"
        return text + "; strongest keys " + ", ".join(f"{quoted(tokens[j])} ({row[j]:.0%})" for j in top) + "."
    w = np.where(np.isfinite(m), m, 0.0)
    flat = int(np.argmax(w))
    q, k = divmod(flat, w.shape[1])
    column = w.mean(axis=0)
    most = int(np.argmax(column))
    return (
        f"{name}: the strongest weight is {quoted(tokens[q])} → {quoted(tokens[k])} ({w[q, k]:.0%}); on average "
        f"a token gives {column[most]:.0%} of its attention to {quoted(tokens[most])}, the most-attended key."
    )
