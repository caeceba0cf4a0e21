"""Which cells each query row of a long text sees, and which rows each statistic averages over: the mask rule of a
layer, the relations between tokens as sparse pair lists (model/analysis/streaming.py reads them block by block).

Shapes: N tokens, R rows of a block, C keys it sees, P pairs.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch


@dataclass(frozen=True)
class Rule:
    """Which cells a layer's mask blocks, and what q·k is multiplied by (1/√d_k, a model's own scalar, or 1)."""

    causal: bool
    window: int  # the layer's sliding window; 0: a global layer
    factor: float
    softcap: float = 0.0  # Gemma 2: scores capped to c·tanh(s / c) after the scaling

    def keys(self, r0: int, r1: int, n: int) -> tuple[int, int]:
        """The key range [lo, hi) that some query in [r0, r1) may see."""
        lo, hi = 0, (r1 if self.causal else n)
        if self.window and self.causal:
            lo = max(0, r0 - self.window + 1)
        elif self.window:
            lo, hi = max(0, r0 - self.window // 2), min(n, r1 + self.window // 2)
        return lo, hi

    def blocked(self, rows: torch.Tensor, cols: torch.Tensor, pairs: bool = False) -> torch.Tensor | None:
        """(R, C) bool: the cells the mask blocks (None: none), as Transformer.build_masks masks them; ``pairs``:
        (P,) for the cells (rows[i], cols[i]) instead."""
        i, j = (rows, cols) if pairs else (rows[:, None], cols[None, :])
        out = (j > i) if self.causal else None
        if self.window:
            far = (j <= i - self.window) if self.causal else ((i - j).abs() > self.window // 2)
            out = far if out is None else out | far
        return out


@dataclass(frozen=True)
class Tokens:
    """What the relations need to know of the N tokens (numpy, from an observation's tokens and text)."""

    labels: np.ndarray  # (N,) int64, equal for tokens with the same label ("same token", as Find heads compares)
    words: np.ndarray  # (N,) int64 word of each token, -1 for special tokens ("same word")
    special: np.ndarray  # (N,) bool
    cls: np.ndarray  # (N,) bool: [CLS] or <s>
    sep: np.ndarray  # (N,) bool: [SEP] or </s>
    punctuation: np.ndarray  # (N,) bool, ordinary tokens made of punctuation

    def pairs(self, relation: str) -> tuple[np.ndarray, np.ndarray]:
        """(query rows, keys) of "same token" or "same word" (queries ordinary, never the query itself), sorted by
        row: a long text's relations as sparse lists instead of (N, N) masks."""
        group = self.labels if relation == "same token" else np.where(self.words >= 0, self.words, -1)
        rows, keys = [], []
        order = np.argsort(group, kind="stable")
        bounds = np.flatnonzero(np.diff(group[order])) + 1
        for members in np.split(order, bounds):
            if len(members) < 2 or (relation == "same word" and group[members[0]] < 0):
                continue
            r, k = np.meshgrid(members, members, indexing="ij")
            keep = r != k
            rows.append(r[keep])
            keys.append(k[keep])
        if not rows:
            return np.zeros(0, np.int64), np.zeros(0, np.int64)
        rows, keys = np.concatenate(rows), np.concatenate(keys)
        ordinary = ~self.special[rows]
        rows, keys = rows[ordinary], keys[ordinary]
        order = np.lexsort((keys, rows))
        return rows[order], keys[order]


#: the fixed offsets besides −1, 0 and +1 whose mean weight can make a head "positional"
#: (model.analysis.sinks.head_types)
OFFSETS = (*range(-8, -1), *range(2, 9))


def offset_name(k: int) -> str:
    """The row statistic of the weight on key query + k ("offset -2")."""
    return f"offset {k:+d}"


def row_sets(tokens: Tokens, rule: Rule, n: int) -> dict[str, torch.Tensor]:
    """(N,) bool per statistic: the query rows it averages over, as metrics, sinks, kinds and Find heads do."""
    special = torch.from_numpy(tokens.special)
    ordinary = ~special if not bool(special.all()) else torch.ones(n, dtype=torch.bool)
    idx = torch.arange(n)
    ids, words = torch.from_numpy(tokens.labels), torch.from_numpy(tokens.words)
    _, inverse, counts = torch.unique(ids, return_inverse=True, return_counts=True)
    repeats = counts[inverse] > 1
    _, w_inverse, w_counts = torch.unique(words, return_inverse=True, return_counts=True)
    pieces = (w_counts[w_inverse] > 1) & (words >= 0)
    out = dict.fromkeys(("entropy", "mean_distance", "self", "special", "max_weight"), ordinary)
    out |= {"previous": ordinary & (idx >= 1), "next": ordinary & (idx <= n - 2)}
    first = np.zeros(n, dtype=bool)
    first[:1] = True
    for name, cols in (("[CLS]", tokens.cls), ("[SEP]", tokens.sep), ("punctuation", tokens.punctuation),
                       ("position 0", first)):  # fmt: skip
        # the queries that can see the target, not the target itself (model.analysis.sinks.sink_shares)
        can = seeing(rule, cols, n) & ~torch.from_numpy(cols)
        out[name] = can if bool(can.any()) else torch.ones(n, dtype=torch.bool)
    out |= {"same token": ordinary & repeats, "same word": ~special & pieces}
    out["broad"] = visible_rows(rule, idx, n) > 1
    out |= {offset_name(k): torch.ones(n, dtype=torch.bool) for k in OFFSETS}  # every row, as diagonal_mass
    return out


def seeing(rule: Rule, cols: np.ndarray, n: int) -> torch.Tensor:
    """(N,) bool: the query rows that may see at least one of the key columns ``cols`` ((N,) bool), as
    :meth:`Rule.blocked` blocks cells: from the columns' running count, O(N) (a long text has hundreds of
    punctuation columns)."""
    return torch.from_numpy(counted(rule, cols, n) > 0)


def counted(rule: Rule, cols: np.ndarray, n: int, rows: np.ndarray | None = None) -> np.ndarray:
    """(R,) int64: how many of the key columns ``cols`` ((N,) bool) each query row (default every row) may see,
    from the columns' running count."""
    before = np.concatenate([[0], np.cumsum(np.asarray(cols, dtype=np.int64))])  # (N + 1,): columns before j
    lo, hi = spans(rule, n, rows)
    return before[hi] - before[lo]


def spans(rule: Rule, n: int, rows: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """((R,), (R,)) int64: the keys [lo, hi) each query row (default every row) may see, as Rule.blocked blocks."""
    i = np.arange(n) if rows is None else np.asarray(rows, dtype=np.int64)
    if rule.causal:  # keys (i − window, i], or [0, i]
        lo, hi = (np.maximum(i - rule.window + 1, 0) if rule.window else np.zeros_like(i)), i + 1
    elif rule.window:  # keys [i − w/2, i + w/2]
        lo, hi = np.maximum(i - rule.window // 2, 0), np.minimum(i + rule.window // 2, n - 1) + 1
    else:
        lo, hi = np.zeros_like(i), np.full_like(i, n)
    return lo, hi


def visible_rows(rule: Rule, rows: torch.Tensor, n: int) -> torch.Tensor:
    """(R,) how many keys each query row may see."""
    if rule.causal:
        seen = rows + 1
        return seen.clamp_max(rule.window) if rule.window else seen
    if not rule.window:
        return torch.full_like(rows, n)
    half = rule.window // 2
    return (rows + half).clamp_max(n - 1) - (rows - half).clamp_min(0) + 1


def pair_mass(p, qi: np.ndarray, ki: np.ndarray, r0: int, r1: int, lo: int, hi: int, rule: Rule) -> torch.Tensor:
    """(H, R): each row's weight on its keys of a sparse relation (pairs sorted by row), within what it sees."""
    a, b = np.searchsorted(qi, [r0, r1])
    rows, keys = torch.from_numpy(qi[a:b]), torch.from_numpy(ki[a:b])
    out = torch.zeros(p.shape[0], r1 - r0)
    if not len(rows):
        return out
    seen = (keys >= lo) & (keys < hi)
    blocked = rule.blocked(rows, keys, pairs=True)
    if blocked is not None:
        seen &= ~blocked
    rows, keys = rows[seen] - r0, keys[seen] - lo
    return out.index_add_(1, rows, p[:, rows, keys])
