"""Long inputs, up to a model's whole context (SmolLM2: 8,192 tokens), in memory that grows linearly with length.

One forward pass (model/whole.py) runs attention in the fused kernel (no N × N matrix) and keeps each layer's q and
k, layer by layer; any head's
weights are then computed from them when a page shows them (model/analysis/streaming.py), a block of query rows at
a time. SmolLM2 at 8,192 tokens: its patterns would take 30 × 9 × 8,192² × 4 B = 72 GB; its q and k take 0.75 GB.

    long = observe_long(model, tokenizer, text)     # model.whole: q, k, the final hidden states
    long.summarise(progress)                         # every head: grid, metrics, logsumexp (one pass, streamed)
    long.grid(3, 1)                                  # (B, B) block means of L3H1, ≤ 160 cells a side
    long.weights(3, 1, rows=(100, 140), cols=(0, 200))  # exact weights in a window
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field

import numpy as np
import torch

from model.analysis.find import Found, word_ids
from model.analysis.find_long import picked
from model.analysis.sinks import target_columns
from model.analysis.streaming import (
    ROW_STATS,
    Cancelled,
    LayerSummary,
    Rule,
    Tokens,
    grid_width,
    head_grid,
    scores_block,
    summarise_layer,
    visible_cells,
    weights,
    weights_at,
)
from model.analysis.turns import PagesFirst
from model.long_pooled import Pooling, Progress
from model.memory import release_freed_memory
from model.observe import LONG_FROM

#: grid cells a side: what a page draws of a whole head (viz.shell.choices.SCREEN_CELLS)
GRID_CELLS = 160
SAMPLED_ROWS = 16  # rows per head kept for head similarity (as model.analysis.similarity compares 16 rows)

__all__ = ["GRID_CELLS", "LONG_FROM", "Cancelled", "LongObservation"]


@dataclass
class LongObservation(Pooling):
    """A long text's attention: q and k of every layer, each head's summary once streamed (thread-safe: pages read
    while the summary fills in). Shapes as in :class:`model.observe.Observation`: q (L, H, N, d_k), k (L, H_kv, N,
    d_k); grids (B, B) with B = ceil(N / width) ≤ GRID_CELLS.

    Filled layer by layer when made by :func:`prepare_long` and :func:`read_long`: ``ready`` layers hold their q
    and k (a page can draw them while the pass goes on), ``hidden`` is empty and ``complete`` false until the
    pass is over."""

    tokens: list[str]
    ids: list[int]
    offsets: list[tuple[int, int]]
    special: np.ndarray  # (N,) bool
    text: str
    q: np.ndarray
    k: np.ndarray
    hidden: np.ndarray  # (N, d_model)
    causal: bool
    rules: tuple[Rule, ...]  # per layer
    forward_ms: float
    notices: list[str] = field(default_factory=list)
    ready: int | None = None  # layers whose q and k are written (None: every layer)
    width: int = 1  # tokens per grid cell
    summaries: list[LayerSummary | None] = field(default_factory=list, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    _layer_locks: list[threading.Lock] = field(default_factory=list, repr=False)
    _pool_locks: list[threading.Lock] = field(default_factory=list, repr=False)
    _counts: dict[int, np.ndarray] = field(default_factory=dict, repr=False)
    _peaks: dict[tuple[int, int, str], np.ndarray] = field(default_factory=dict, repr=False)
    _heads: dict[tuple[int, int], LayerSummary] = field(default_factory=dict, repr=False)  # one head's, for now
    _pooled: dict[tuple[int, int], np.ndarray] = field(default_factory=dict, repr=False)  # thumbnails' block sums
    turns: PagesFirst = field(default_factory=PagesFirst, repr=False)  # pages compute before the background run

    def __post_init__(self) -> None:
        self.width = grid_width(self.n_tokens, GRID_CELLS)
        self.ready = self.n_layers if self.ready is None else self.ready
        self.summaries = [None] * self.n_layers
        self._layer_locks = [threading.Lock() for _ in range(self.n_layers)]
        self._pool_locks = [threading.Lock() for _ in range(self.n_layers)]  # each layer's thumbnails, computed once
        words = word_ids(self.text, self.offsets, self.special)
        cols = target_columns(self.tokens, self.special)
        labels = np.unique(np.array(self.tokens, dtype=object), return_inverse=True)[1].astype(np.int64)
        self._tokens = Tokens(labels, words, self.special, cols["[CLS]"], cols["[SEP]"], cols["punctuation"])
        self._relations = {name: self._tokens.pairs(name) for name in ("same token", "same word")}
        ordinary = np.flatnonzero(~self.special) if (~self.special).any() else np.arange(self.n_tokens)
        picks = np.linspace(0, len(ordinary) - 1, min(SAMPLED_ROWS, len(ordinary))).round().astype(int)
        self.sample_rows = ordinary[np.unique(picks)]

    @property
    def complete(self) -> bool:
        """Whether the forward pass is over: every layer's q and k and the final hidden states are here."""
        return self.ready == self.n_layers and len(self.hidden) == self.n_tokens

    def _need(self, layer: int) -> None:
        if layer >= self.ready:
            raise ValueError(f"layer {layer} is not read yet ({self.ready} of {self.n_layers} layers so far)")

    @property
    def n_layers(self) -> int:
        return self.q.shape[0]

    @property
    def n_heads(self) -> int:
        return self.q.shape[1]

    @property
    def n_tokens(self) -> int:
        return self.q.shape[2]

    @property
    def kv_group(self) -> int:
        return self.q.shape[1] // self.k.shape[1]

    @property
    def nbytes(self) -> int:
        return self.q.nbytes + self.k.nbytes + self.hidden.nbytes

    @property
    def cells(self) -> int:
        """Grid cells a side."""
        return -(-self.n_tokens // self.width)

    def edges(self) -> np.ndarray:
        """(B + 1,) token positions where grid cells start (the last: N)."""
        return np.minimum(np.arange(self.cells + 1) * self.width, self.n_tokens)

    @contextmanager
    def _computing(self):
        """A page's computation: the background run waits meanwhile (model/analysis/turns.py), and what it freed
        goes back to the OS after it (a server's heaps keep up to 1 GB freed each, model/memory.py: the thumbnails
        of 30 layers piled up 0.2 GB while the background run, which trims after each of its layers, waited)."""
        with self.turns.serving():
            yield
        release_freed_memory()

    # ---- the summary: every head streamed once -------------------------------------------------------------------
    def summary(self, layer: int, cancel: Callable[[], bool] | None = None, *, behind: bool = False) -> LayerSummary:
        """Layer ``layer``'s summary, streamed now unless it already was (once, whoever asks first); ``behind``:
        for the background run, which lets pages go first."""
        self._need(layer)
        with self._layer_locks[layer]:
            if self.summaries[layer] is None:
                with nullcontext() if behind else self._computing():
                    self.summaries[layer] = self._stream(layer, None, self.turns.behind(cancel) if behind else cancel)
                self._heads = {key: one for key, one in self._heads.items() if key[0] != layer}  # the layer's now
            return self.summaries[layer]

    def head_summary(self, layer: int, head: int) -> tuple[LayerSummary, int]:
        """(a summary, ``head``'s index in it) for a page that shows one head: its layer's once streamed, else this
        head's alone, streamed now and kept till then (SmolLM2 at 8,192 tokens: 0.16 s against the layer's 1.4 s)."""
        if (whole := self.summaries[layer]) is not None:
            return whole, head
        self._need(layer)
        if (found := self._heads.get((layer, head))) is None:  # two pages at once may both stream it
            with self._computing():
                found = self._stream(layer, head)
            if self.summaries[layer] is None:  # not kept beside a layer summary that came meanwhile
                self._heads[(layer, head)] = found
        return found, 0

    def _stream(self, layer: int, head: int | None, cancel: Callable[[], bool] | None = None) -> LayerSummary:
        """The summary of one layer's heads (``head``: that query head alone, with the key head it reads)."""
        heads = slice(None) if head is None else slice(head, head + 1)
        kv = slice(None) if head is None else slice(head // self.kv_group, head // self.kv_group + 1)
        return summarise_layer(self.q[layer, heads], self.k[layer, kv], self.rules[layer], self._tokens, self.width,
                               self.sample_rows, cancel, self._relations)  # fmt: skip

    def summarise(self, progress: Progress | None = None, cancel: Callable[[], bool] | None = None) -> None:
        """Stream every layer not streamed yet, in the background (pages go first); ``progress(layers done, L)``."""
        for layer in range(self.n_layers):
            self.summary(layer, cancel, behind=True)
            if progress is not None:
                progress(layer + 1, self.n_layers)

    @property
    def summarised(self) -> int:
        """Layers streamed so far."""
        return sum(s is not None for s in self.summaries)

    def counts(self, layer: int) -> np.ndarray:
        """(B, B) cells of each grid cell the mask lets through (the same for every head of a layer)."""
        with self._lock:
            if layer not in self._counts:
                same = next((i for i in self._counts if self.rules[i] == self.rules[layer]), None)
                found = self._counts[same] if same is not None else None
                self._counts[layer] = found if found is not None else visible_cells(self.rules[layer], self.n_tokens,
                                                                                    self.width)  # fmt: skip
            return self._counts[layer]

    def grid(self, layer: int, head: int, how: str = "mean") -> np.ndarray:
        """(B, B) float32 block means of one head over the cells its mask lets through (−inf: a cell all masked),
        as viz.figures.common.fit_to_screen averages a full pattern; ``how="max"``: each cell's largest weight."""
        counts = self.counts(layer)
        if how == "max":
            cells = self.peak(layer, head)
        else:
            summary, index = self.head_summary(layer, head)
            cells = summary.grid[index] / np.maximum(counts, 1)
        return np.where(counts > 0, cells, -np.inf).astype(np.float32)

    def peak(self, layer: int, head: int, how: str = "max") -> np.ndarray:
        """(B, B) one head's grid streamed when first asked for (then kept): each cell's largest weight, or
        (``how="without first"``) its sum of weights with position 0 taken away and rows rescaled."""
        with self._lock:
            found = self._peaks.get((layer, head, how))
        if found is None:
            self._need(layer)
            kv = head // self.kv_group
            with self._computing():
                found = head_grid(self.q[layer, head], self.k[layer, kv], self.rules[layer], self.width, how)
            with self._lock:
                self._peaks[(layer, head, how)] = found
        return found

    def stats(self) -> dict[str, np.ndarray]:
        """{name: (L, H)} for every name in ROW_STATS (head metrics, sink shares, relations): needs every layer."""
        return {name: np.stack([self.summary(i).stats[name] for i in range(self.n_layers)]) for name in ROW_STATS}

    # ---- exact values on demand ----------------------------------------------------------------------------------
    def weights(self, layer: int, head: int | None, rows: tuple[int, int], cols: tuple[int, int]) -> np.ndarray:
        """Exact weights of query rows [a, b) on keys [c, d): (R, C) for one head, (H, R, C) for every head."""
        self._need(layer)
        out = weights(self.q[layer], self.k[layer], self.rules[layer], rows, cols)
        return out if head is None else out[head]

    def scores(self, layer: int, head: int, rows: tuple[int, int], cols: tuple[int, int]) -> np.ndarray:
        """(R, C) exact scaled scores q·k of rows [a, b) and keys [c, d), −inf where the mask blocks."""
        (a, b), (c, d) = rows, cols
        self._need(layer)
        q = torch.from_numpy(np.ascontiguousarray(self.q[layer, head : head + 1, a:b]))  # (1, R, d_k)
        kv = head // self.kv_group
        k = torch.from_numpy(np.ascontiguousarray(self.k[layer, kv : kv + 1, c:d]))  # (1, C, d_k)
        return scores_block(q, k, self.rules[layer], a, c)[0].numpy()

    def row(self, layer: int, head: int, query: int) -> np.ndarray:
        """(N,) exact weights of one query on every key."""
        return self.weights(layer, head, (query, query + 1), (0, self.n_tokens))[0]

    def column(self, layer: int, head: int, key: int) -> np.ndarray:
        """(N,) exact weight every query gives one key (the rows' logsumexp comes from the layer's summary)."""
        return self.columns(layer, key)[head]

    def columns(self, layer: int, key: int) -> np.ndarray:
        """(H, N) exact weight every query gives one key, for every head of a layer."""
        return self.weights_at(layer, np.arange(self.n_tokens), [key])[..., 0]

    def weights_at(self, layer: int, rows, keys, total: bool = False) -> np.ndarray:
        """(H, R, K) exact weights of any rows on any keys (``total``: (H, R) summed over the keys), every head of a
        layer: a product over those cells only (the rows' logsumexp comes from the layer's summary)."""
        lse = self.summary(layer).lse
        with self._computing():
            return weights_at(self.q[layer], self.k[layer], self.rules[layer], lse, rows, keys, total)

    def pair(self, query: int, key: int) -> Found:
        """Find heads' score of one (query, key) pair for every head, exact (model.analysis.find_long.picked)."""
        return picked(self, (query,), (key,))

    def relation_pairs(self, relation: str) -> tuple[np.ndarray, np.ndarray]:
        """(query rows, keys) of "same token" or "same word", sorted by row (model.analysis.rows.Tokens.pairs)."""
        return self._relations[relation]
