"""Find heads over a text read whole (model/long.py): the :class:`~model.analysis.find.Found` that
:func:`~model.analysis.find.find_heads` gives the full patterns, with no N × N pattern — picked tokens from their exact
rows and columns, relations from the streamed row statistics, chance from each layer's mask.

``long`` is a :class:`model.long.LongObservation` (duck-typed: this module does not import it). Shapes: L layers,
H heads, N tokens.
"""

from __future__ import annotations

import numpy as np

from model.analysis.find import Found, is_punctuation
from model.analysis.rows import counted, seeing, spans

#: relations whose score is a streamed row statistic of the same name (each query has keys of its own: no column)
STREAMED = ("previous", "next", "same token", "same word", "special")


def ordinary_rows(long) -> np.ndarray:
    """(N,) bool: the queries Find heads counts (every token when the text is all special tokens)."""
    ordinary = ~np.asarray(long.special, dtype=bool)
    return ordinary if ordinary.any() else np.ones(long.n_tokens, dtype=bool)


def found_whole(long, relation: str, queries=(), keys=()) -> Found:
    """:func:`picked` for ``relation`` "tokens", else :func:`related`."""
    return picked(long, queries, keys) if relation == "tokens" else related(long, relation)


def picked(long, queries, keys) -> Found:
    """Every chosen query with every chosen key (``token_pairs``), exact: each query's weight on the keys, the keys'
    weight from every other ordinary query that can see one of them (a column pattern), chance per layer."""
    n, layers = long.n_tokens, range(long.n_layers)
    queries, keys = np.unique(np.asarray(queries, dtype=np.int64)), np.unique(np.asarray(keys, dtype=np.int64))
    if not len(queries) or not len(keys):
        raise ValueError("no (query, key) pair to look for: pick at least one query and one key")
    wanted = np.zeros(n, dtype=bool)
    wanted[keys] = True
    score = np.stack([long.weights_at(i, queries, keys, total=True).mean(-1) for i in layers])  # (L, H)
    others = ordinary_rows(long) & ~wanted
    others[queries] = False
    column = None
    if others.any():  # over the other queries each layer lets see a key (as find_heads)
        column = np.zeros_like(score)
        for i in layers:
            sees = others & seeing(long.rules[i], wanted, n).numpy()
            use = np.flatnonzero(sees if sees.any() else others)
            column[i] = long.weights_at(i, use, keys, total=True).mean(-1)  # one product for all the keys
    chance = np.array([_chance_of_columns(rule, n, queries, wanted) for rule in long.rules])  # (L,)
    return Found(score.astype(np.float32), column, chance, len(queries))


def related(long, relation: str) -> Found:
    """A relation's pairs (model.analysis.find.relation_pairs) over the whole text: "previous", "next", "same token",
    "same word", "special" from the streamed statistics, "punctuation" from the weight each key receives. Raises
    ValueError when the text has no pair for it."""
    n, ordinary = long.n_tokens, ~np.asarray(long.special, dtype=bool)
    if relation in ("previous", "next"):
        step = -1 if relation == "previous" else 1
        queries = np.flatnonzero(ordinary & (np.arange(n) + step >= 0) & (np.arange(n) + step < n))
        rows, keys = queries, queries + step
    elif relation in ("same token", "same word"):
        rows, keys = long.relation_pairs(relation)  # sorted by row, queries ordinary, never the query itself
        queries = np.unique(rows)
    elif relation in ("special", "punctuation"):
        wanted = long.special.copy() if relation == "special" else np.array([is_punctuation(t) for t in long.tokens])
        queries = np.flatnonzero(ordinary) if wanted.any() else np.zeros(0, np.int64)
    else:
        raise ValueError(f"unknown relation {relation!r}")
    if not len(queries):
        raise ValueError(f"no (query, key) pair for {relation!r} in this text")
    if relation in ("special", "punctuation"):
        chance = np.array([_chance_of_columns(rule, n, queries, wanted) for rule in long.rules])
    else:
        chance = np.array([_chance_of_pairs(rule, n, queries, rows, keys) for rule in long.rules])
    score = long.stats()[relation] if relation in STREAMED else _received_from(long, queries, wanted)
    return Found(np.asarray(score, dtype=np.float32), None, chance, len(queries))


def _received_from(long, queries: np.ndarray, wanted: np.ndarray) -> np.ndarray:
    """(L, H) mean over ``queries`` of their weight on the ``wanted`` keys: what every query gives them (the summary's
    received weight) less what the other queries give them, exactly (the others are few: special tokens)."""
    n = long.n_tokens
    rest = np.setdiff1d(np.arange(n), queries)
    out = []
    for i in range(long.n_layers):
        total = long.summary(i).received[:, wanted].astype(np.float64).sum(-1)  # (H,)
        if len(rest):
            total -= long.weights_at(i, rest, np.flatnonzero(wanted), total=True).sum(-1)
        out.append(total / len(queries))
    return np.stack(out)


def _chance_of_columns(rule, n: int, queries: np.ndarray, wanted: np.ndarray) -> float:
    """The score of a head spreading evenly over what each query may see, when every query has the keys ``wanted``."""
    lo, hi = spans(rule, n, queries)
    return float((counted(rule, wanted, n, queries) / np.maximum(hi - lo, 1)).mean())


def _chance_of_pairs(rule, n: int, queries: np.ndarray, rows: np.ndarray, keys: np.ndarray) -> float:
    """The same for sparse pairs (rows[i], keys[i]): each query's visible keys of its own over the keys it sees."""
    lo, hi = spans(rule, n)
    seen = (keys >= lo[rows]) & (keys < hi[rows])
    mine = np.bincount(rows[seen], minlength=n)[queries]
    return float((mine / np.maximum(hi - lo, 1)[queries]).mean())
