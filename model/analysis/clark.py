"""Head statistics exactly as Clark et al. (2019, "What Does BERT Look At?") compute them in their
General_Analysis notebook — beside the lab's own (model/analysis/metrics.py), which average over ordinary queries
only. Here every token counts as a query, sums are divided by the document's length n, and the averages are means
over documents:

- ``self``, ``next`` ("right"), ``previous`` ("left"): Σ_i w[i, i + offset] / n (the first or last row has no
  such key and counts as 0);
- ``cls``, ``sep``, ``punct``: the weight all queries put on [CLS], on [SEP], on "." and ",", divided by n;
- ``sep_sep``: [SEP] → [SEP] weight / 2; ``rest_sep``: the other queries' weight on [SEP] / (n − 2);
- ``entropy``: of every row after smoothing w ← 0.9999 w + 0.0001 / n, averaged over rows; ``entropy_cls``: of
  the [CLS] row (position 0).

``tests/model/test_clark.py`` compares these with what their notebook's own cells compute
(scripts/make_clark_fixture.py runs them)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

CLARK_METRICS = ("self", "next", "previous", "cls", "sep", "punct", "sep_sep", "rest_sep", "entropy", "entropy_cls")
CLARK_HELP = {
    "self": "Clark et al.: Σ weight on itself over every row (special tokens included) ÷ the text's length.",
    "next": "Clark et al. (“right”): Σ weight on the next token over every row ÷ the length (the last row adds 0).",
    "previous": "Clark et al. (“left”): Σ weight on the previous token over every row ÷ the length.",
    "cls": "Clark et al.: Σ weight on [CLS] over every row ÷ the length.",
    "sep": "Clark et al.: Σ weight on [SEP] over every row ÷ the length.",
    "punct": "Clark et al.: Σ weight on “.” and “,” over every row ÷ the length.",
    "sep_sep": "Clark et al.: the [SEP] rows' weight on [SEP] ÷ 2.",
    "rest_sep": "Clark et al.: the other rows' weight on [SEP] ÷ (length − 2).",
    "entropy": "Clark et al.: entropy in nats of every row after smoothing (0.9999 w + 0.0001 / n), averaged.",
    "entropy_cls": "Clark et al.: entropy in nats of the [CLS] row (position 0) after the same smoothing.",
}


def clark_metrics(documents: Sequence[tuple[Sequence[str], np.ndarray]]) -> dict[str, np.ndarray]:
    """``documents``: (tokens (n,), attention (L, H, n, n)) pairs. Returns {metric: (L, H) float64}, the mean over
    the documents of each per-document statistic above."""
    if not documents:
        raise ValueError("Clark et al.'s statistics need at least one document")
    totals: dict[str, np.ndarray] = {}
    for tokens, attns in documents:
        if len(tokens) != np.shape(attns)[-1]:
            raise ValueError(f"{len(tokens)} tokens for attention over {np.shape(attns)[-1]} positions")
        layers = [_document(tokens, np.asarray(layer, dtype=np.float64)) for layer in attns]  # a layer at a time
        for key in CLARK_METRICS:
            totals[key] = totals.get(key, 0.0) + np.stack([stats[key] for stats in layers])  # (L, H)
    return {key: totals[key] / len(documents) for key in CLARK_METRICS}


def _document(tokens: Sequence[str], a: np.ndarray) -> dict[str, np.ndarray]:
    """One document's statistics for one layer: a (H, n, n) float64 -> {metric: (H,)}."""
    n = a.shape[-1]
    sep = np.array([t == "[SEP]" for t in tokens], dtype=np.float64)  # (n,)
    cls = np.array([t == "[CLS]" for t in tokens], dtype=np.float64)
    punct = np.array([t in (".", ",") for t in tokens], dtype=np.float64)
    on_sep = a @ sep  # (H, n): each row's weight on [SEP]
    stats = {
        "self": np.trace(a, axis1=-2, axis2=-1) / n,
        "next": np.trace(a, offset=1, axis1=-2, axis2=-1) / n,
        "previous": np.trace(a, offset=-1, axis1=-2, axis2=-1) / n,
        "cls": (a @ cls).sum(-1) / n,
        "sep": on_sep.sum(-1) / n,
        "punct": (a @ punct).sum(-1) / n,
        "sep_sep": (on_sep * sep).sum(-1) / 2,
        "rest_sep": (on_sep * (1 - sep)).sum(-1) / max(n - 2, 1),
    }
    smooth = 0.9999 * a + 0.0001 / n
    rows = -(smooth * np.log(smooth)).sum(-1)  # (H, n)
    stats["entropy"], stats["entropy_cls"] = rows.mean(-1), rows[:, 0]
    return stats
