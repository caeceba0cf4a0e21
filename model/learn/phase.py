"""Finding the moment heads form: the loss's phase change and the step each head's score crosses a threshold.

Olsson et al. (2022) see induction heads form in a sudden phase change, a bump in the training loss. Here the
phase change is the step where the smoothed loss falls fastest (the most negative slope of its moving average)
after the first 5 % of the run (the first fall, from chance to the tokens' frequencies, is not one), provided it
falls by a real amount around it; a head "forms" at the first snapshot where its score reaches the
threshold (0.5 by default) and stays there at the next snapshot too.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

MIN_DROP = 0.25  # nats the smoothed loss must fall across the change for it to count as one


@dataclass(frozen=True)
class PhaseChange:
    """The step of the steepest fall of the smoothed loss, and the smoothed loss a window before and after it."""

    step: int
    before: float
    after: float


def smooth(values: np.ndarray, window: int) -> np.ndarray:
    """Moving average over ``window`` steps (shorter at the ends, so every step keeps a value): (S,) -> (S,)."""
    values = np.asarray(values, dtype=np.float64)
    if values.size == 0:
        return values
    window = max(1, min(int(window), values.size))
    csum = np.concatenate([[0.0], np.cumsum(values)])
    i = np.arange(values.size)
    lo = np.clip(i - window // 2, 0, values.size)
    hi = np.clip(i + (window - window // 2), 0, values.size)
    return (csum[hi] - csum[lo]) / (hi - lo)


def phase_change(losses: np.ndarray, window: int | None = None) -> PhaseChange | None:
    """losses (S,): the training loss of steps 1 … S. The step (1-based) where the smoothed loss falls fastest,
    or None when it never falls by ``MIN_DROP`` nats within a window either side of that step."""
    losses = np.asarray(losses, dtype=np.float64)
    if losses.size < 8:
        return None
    window = window or max(5, losses.size // 40)
    curve = smooth(losses, window)
    slope = np.gradient(smooth(curve, window))  # the slope of the smoothed curve, smoothed again: one clear minimum
    start = max(2 * window, losses.size // 20)  # the first fall, to the tokens' unigram entropy, is no phase change
    i = start + int(np.argmin(slope[start:])) if start < losses.size - 1 else int(np.argmin(slope))
    before = float(curve[max(0, i - window)])
    after = float(curve[min(curve.size - 1, i + window)])
    if before - after < MIN_DROP:
        return None
    return PhaseChange(step=i + 1, before=before, after=after)


def formed(steps: np.ndarray, scores: np.ndarray, threshold: float = 0.5) -> dict[tuple[int, int], int]:
    """steps (S,) and scores (S, L, H): for each head whose score reaches ``threshold`` and holds it at the next
    snapshot (or is last), the first such step."""
    steps, scores = np.asarray(steps), np.asarray(scores, dtype=np.float64)
    above = scores >= threshold  # (S, L, H)
    held = above & np.concatenate([above[1:], above[-1:]], axis=0)  # true now and at the next snapshot
    out = {}
    for layer, head in zip(*np.nonzero(held.any(axis=0)), strict=True):
        out[(int(layer), int(head))] = int(steps[int(np.argmax(held[:, layer, head]))])
    return dict(sorted(out.items(), key=lambda kv: kv[1]))


def loss_at(losses: np.ndarray, step: int, window: int | None = None) -> float:
    """The smoothed training loss at ``step`` (1-based; 0 reads the first step)."""
    losses = np.asarray(losses, dtype=np.float64)
    window = window or max(5, losses.size // 40)
    return float(smooth(losses, window)[min(max(step, 1), losses.size) - 1])
