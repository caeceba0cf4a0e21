"""A long text's block means pooled from its heads' weights, for :class:`model.long.LongObservation`: the model
overview's thumbnails, a layer's every head and their mean — from a layer's summary once streamed, else through the
fused kernel (model/analysis/thumbs.py), each layer's sums kept once whoever asks first.

Shapes: L layers, H heads, B grid cells a side (the observation's ``cells``), t ≤ B pooled blocks a side.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import nullcontext

import numpy as np

from model.analysis.streaming import Cancelled
from model.analysis.thumbs import block_sums

Progress = Callable[[int, int], None]


class Pooling:
    """What :class:`model.long.LongObservation` pools (its q, k, rules, summaries, grid cells and the locks and
    kept sums ``_pooled`` / ``_pool_locks`` are its own)."""

    def pooled(self, size: int, layers=None, *, fine: bool = False) -> tuple[np.ndarray, np.ndarray]:
        """Plain block means (masked cells count as 0, as viz.figures.common.downsample averages a pattern) of
        at most ``size`` cells a side: ((L', H, t, t) float32, (t + 1,) token bounds). ``layers``: which (default
        every layer). From a layer's grid once its summary is streamed, else through the fused kernel
        (model/analysis/thumbs.py: the overview need not wait for the summary), else its summary, streamed now.
        ``fine``: the kernel's sums taken at the grid's own cells and kept (:meth:`head_mean` then reads them)."""
        picks, bounds = self._bounds(size)
        area = np.outer(np.diff(bounds), np.diff(bounds)).astype(np.float64)
        chosen = range(self.n_layers) if layers is None else layers
        sums = np.stack([self._block_sums(layer, picks, bounds, fine=fine) for layer in chosen])  # (L', H, t, t)
        return (sums / area).astype(np.float32), bounds

    def head_mean(self, layer: int) -> np.ndarray:
        """(B, B) float32: the mean over the layer's heads of :meth:`grid` (block means over the cells the mask lets
        through, −inf: a cell all masked), from the layer's summary once streamed, else the fused kernel's block sums
        at the grid's cells — no summary of each head (SmolLM2 at 8,192 tokens: 0.41 s for its nine against 1.4 s)."""
        picks, bounds = self._bounds(self.cells)
        counts = self.counts(layer)
        sums = self._block_sums(layer, picks, bounds, fine=True).mean(0)  # (B, B)
        return np.where(counts > 0, sums / np.maximum(counts, 1), -np.inf).astype(np.float32)

    def thumbnails(self, size: int, progress: Progress | None = None, cancel: Callable[[], bool] | None = None):
        """The background run's thumbnails, after the pass and before the summary (pages go first): every layer's
        block sums for :meth:`pooled` at ``size``, so a model overview opened later draws at once (a layer already
        summarised, or whose scores are soft-capped, is left to its summary). ``progress(layers done, L)``."""
        picks, bounds = self._bounds(size)
        check = self.turns.behind(cancel)
        for layer in range(self.n_layers):
            if check():
                raise Cancelled
            if self.summaries[layer] is None and not self.rules[layer].softcap:
                self._block_sums(layer, picks, bounds, behind=True)
            if progress is not None:
                progress(layer + 1, self.n_layers)

    def _bounds(self, size: int) -> tuple[np.ndarray, np.ndarray]:
        """Which grid cells start the pooled blocks of at most ``size`` a side, and the blocks' token bounds."""
        picks = np.unique(np.linspace(0, self.cells, min(size, self.cells) + 1).round().astype(int))[:-1]
        return picks, np.append(self.edges()[picks], self.n_tokens)  # pooled cells differ by one grid cell at most

    def _block_sums(
        self, layer: int, picks: np.ndarray, bounds: np.ndarray, behind: bool = False, fine: bool = False
    ) -> np.ndarray:
        """(H, t, t) sums of one layer's weights over the pooled blocks (:meth:`pooled`): the kernel's, kept per layer
        and size, once whoever asks first (``behind``: the background run; a page waits a kernel call at most), or
        added up from the sums at the grid's own cells once kept (``fine``: take and keep those)."""
        self._need(layer)
        if self.summaries[layer] is not None or self.rules[layer].softcap:  # the kernel cannot soft-cap scores
            return np.add.reduceat(np.add.reduceat(self.summary(layer).grid, picks, axis=-2), picks, axis=-1)
        whole, kept = (layer, self.cells + 1), self._pooled
        key, edges = (whole, self.edges()) if fine else ((layer, len(bounds)), bounds)
        with self._pool_locks[layer]:
            if whole not in kept and key not in kept:
                with nullcontext() if behind else self._computing():
                    kept[key] = block_sums(self.q[layer], self.k[layer], self.rules[layer], edges)
            if whole not in kept:
                return kept[key]
        return np.add.reduceat(np.add.reduceat(kept[whole], picks, axis=-2), picks, axis=-1)
