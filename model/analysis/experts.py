"""Which experts a mixture-of-experts layer routes each token to, from the weights the router gave (numpy).

N tokens, E experts, k experts per token.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Routing:
    weights: np.ndarray  # (N, E) each expert's weight on each token: k nonzero per row
    first: np.ndarray  # (N,) int, each token's first choice (its largest weight)
    chosen: np.ndarray  # (N, E) bool, the k experts each token was routed to
    load: np.ndarray  # (E,) share of the N·k choices each expert received (sums to 1)
    evenness: float  # the load's entropy ÷ log E: 1 when every expert is chosen equally often, 0 when one takes all

    @property
    def unused(self) -> list[int]:
        """Experts no token was routed to."""
        return [int(e) for e in np.flatnonzero(self.load == 0)]


def routing(weights) -> Routing:
    """The routing of one layer from its expert weights (N, E) as model/moe.py's ``hook_weights`` records them."""
    w = np.asarray(weights, dtype=np.float64)
    if w.ndim != 2 or not w.size:
        raise ValueError(f"expert weights must be (tokens, experts), got shape {w.shape}")
    chosen = w > 0
    counts = chosen.sum(0).astype(np.float64)  # (E,)
    load = counts / max(counts.sum(), 1.0)
    nz = load[load > 0]
    evenness = float(-(nz * np.log(nz)).sum() / np.log(w.shape[1])) if w.shape[1] > 1 else 1.0
    return Routing(w.astype(np.float32), w.argmax(-1), chosen, load.astype(np.float32), evenness)
