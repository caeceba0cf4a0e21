"""What a text read whole (model/long.py) says of every head, from the layers' summaries: head metrics, head
similarity and the weight on position 0. Shapes: L layers, H heads."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from model.analysis.metrics import METRICS
from model.analysis.rows import seeing
from model.analysis.similarity import head_similarity

if TYPE_CHECKING:
    from model.long import LongObservation

__all__ = ["long_metrics", "long_similarity", "long_sink_mass"]


def long_metrics(long: LongObservation) -> dict[str, np.ndarray]:
    """Head metrics {name: (L, H)} of a text read whole, as model.analysis.metrics defines them."""
    stats = long.stats()
    return {name: stats[name] for name in METRICS}


def long_similarity(long: LongObservation) -> tuple[np.ndarray, list[tuple[int, int]]]:
    """Head similarity (model.analysis.similarity) over the sampled rows, keys pooled into the grid's cells."""
    samples = np.stack([long.summary(layer).samples for layer in range(long.n_layers)])  # (L, H, S, B)
    return head_similarity(samples, causal=long.causal)


def long_sink_mass(long: LongObservation) -> np.ndarray:
    """(L, H) the mean weight the queries after position 0 that can see it put on it
    (model.analysis.decoder.sink_mass), exact: every query's weight on key 0 summed in the summary, less query
    0's own, over the queries each layer's mask lets see it (a sliding window hides it from later ones)."""
    first = np.stack([long.weights(i, None, (0, 1), (0, 1))[:, 0, 0] for i in range(long.n_layers)])  # (L, H)
    received = np.stack([long.summary(i).received[:, 0] for i in range(long.n_layers)])
    zero = np.zeros(long.n_tokens, dtype=bool)
    zero[0] = True
    seen = np.array([max(int(seeing(rule, zero, long.n_tokens)[1:].sum()), 1) for rule in long.rules])  # (L,)
    return ((received - first) / seen[:, None]).astype(np.float32)
