"""Find heads: rank every head by how much weight it puts on chosen (query, key) pairs, and tell a head that
links *these* tokens from one whose key simply takes weight from every query (a column pattern).

Pairs come from tokens the user picks (queries × keys) or from a relation: the previous or next token, the
same token elsewhere, the other pieces of the same word, special tokens, punctuation. Pure numpy.
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass

import numpy as np

RELATIONS = ("tokens", "previous", "next", "same token", "same word", "special", "punctuation")
COLUMN_SHARE = 0.4  # a head is flagged when other queries give the keys at least this share of its score


def word_ids(text: str, offsets, special) -> np.ndarray:
    """(N,) index of the whitespace-separated word each token comes from; -1 for special tokens."""
    word_starts = [i for i, ch in enumerate(text) if not ch.isspace() and (i == 0 or text[i - 1].isspace())]
    starts = np.array([s for s, _ in offsets], dtype=np.int64)
    words = np.searchsorted(np.array(word_starts, dtype=np.int64), starts, side="right") - 1
    return np.where(np.asarray(special, dtype=bool), -1, words).astype(np.int64)


def is_punctuation(token: str) -> bool:
    t = token.removeprefix("##").removeprefix("Ġ").removeprefix("▁")
    return bool(t) and all(unicodedata.category(ch).startswith("P") for ch in t)


def relation_pairs(relation: str, tokens: list[str], special, words=None) -> np.ndarray:
    """(N, N) bool: the (query, key) pairs of a relation. Queries are the ordinary tokens; ``words`` (from
    word_ids) is needed for "same word"."""
    n = len(tokens)
    ordinary = ~np.asarray(special, dtype=bool)
    q = np.arange(n)[:, None]
    k = np.arange(n)[None, :]
    if relation == "previous":
        pairs = k == q - 1
    elif relation == "next":
        pairs = k == q + 1
    elif relation == "same token":
        tok = np.array(tokens, dtype=object)
        pairs = (tok[:, None] == tok[None, :]) & (q != k)
    elif relation == "same word":
        if words is None:
            raise ValueError("'same word' needs the tokens' word ids")
        w = np.asarray(words)
        pairs = (w[:, None] == w[None, :]) & (w[:, None] >= 0) & (q != k)
    elif relation == "special":
        pairs = np.broadcast_to(~ordinary[None, :], (n, n))
    elif relation == "punctuation":
        punct = np.array([is_punctuation(t) for t in tokens])
        pairs = np.broadcast_to(punct[None, :], (n, n))
    else:
        raise ValueError(f"unknown relation {relation!r}; choose from {', '.join(RELATIONS[1:])}")
    return pairs & ordinary[:, None]


def token_pairs(n: int, queries, keys) -> np.ndarray:
    """(N, N) bool: every chosen query with every chosen key."""
    pairs = np.zeros((n, n), dtype=bool)
    pairs[np.ix_(list(queries), list(keys))] = True
    return pairs


@dataclass(frozen=True)
class Found:
    """How much each head attends along the chosen pairs.

    score: (L, H) mean over the chosen queries of the weight on their keys. column: (L, H) the same keys'
    mean weight from every *other* ordinary query, or None when each query has its own keys (a relation
    like "previous"). chance: (L,) the score of a head that spreads evenly over what each layer's mask lets a
    query see (a sliding layer's is higher). n_queries: queries with a key."""

    score: np.ndarray
    column: np.ndarray | None
    chance: np.ndarray
    n_queries: int

    @property
    def flagged(self) -> np.ndarray:
        """(L, H) bool: heads whose score comes from a column pattern (other queries give the keys at least
        COLUMN_SHARE of the score), not from the chosen queries."""
        if self.column is None:
            return np.zeros(self.score.shape, dtype=bool)
        return self.column >= COLUMN_SHARE * np.maximum(self.score, 1e-12)

    def ranking(self) -> list[tuple[int, int]]:
        """Every (layer, head), strongest first (ties: lower layer, then head)."""
        L, H = self.score.shape
        order = np.lexsort((np.tile(np.arange(H), L), np.repeat(np.arange(L), H), -self.score.ravel()))
        return [(int(i // H), int(i % H)) for i in order]


def find_heads(patterns: np.ndarray, pairs: np.ndarray, special=None) -> Found:
    """Rank heads by the weight on ``pairs``. patterns: (L, H, N, M); pairs: (N, M) bool (query, key); M = N for
    self-attention, the source's length for a decoder's cross-attention (``special`` is then the queries').

    A query counts when it has at least one key. When every counted query has the same keys (picked tokens,
    special tokens, punctuation), ``column`` measures those keys' weight from the other ordinary queries that can
    see one of them (a sliding window keeps the keys from far queries, whose zeros would hide a column pattern)."""
    pairs = np.asarray(pairs, dtype=bool)
    n, square = patterns.shape[-2], patterns.shape[-1] == patterns.shape[-2]
    queries = np.flatnonzero(pairs.any(1))
    if len(queries) == 0:
        raise ValueError("no (query, key) pair to look for: pick at least one query and one key")
    chosen = pairs[queries].astype(np.float32)  # (Q, M)
    keys = pairs[queries[0]]
    same_keys = all((pairs[q] == keys).all() for q in queries)
    others = np.empty(0, dtype=np.int64)
    if same_keys:
        ordinary = np.ones(n, dtype=bool) if special is None else ~np.asarray(special, dtype=bool)
        others = np.flatnonzero(ordinary & ~np.isin(np.arange(n), queries) & (~keys if square else True))
    n_layers, n_heads = patterns.shape[:2]
    score = np.empty((n_layers, n_heads), dtype=np.float32)
    chance = np.empty(n_layers, dtype=np.float64)
    column = np.empty((n_layers, n_heads), dtype=np.float32) if len(others) else None
    # a layer at a time: each step's temporaries are one layer's (H, Q, M), never the whole stack's — at 512
    # tokens of a 30-layer model the stack's would be about 1 GB of fresh memory, slow to fault in
    for layer in range(n_layers):
        layer_p = patterns[layer]  # (H, N, M), in the stack's dtype (float16 for a long capture)
        p = np.asarray(layer_p[:, queries], dtype=np.float32)  # (H, Q, M): only the rows used are converted
        score[layer] = np.einsum("hqm,qm->hq", p, chosen).mean(-1)  # each query's weight on its keys, averaged
        seen = (p > 0).any(axis=0)  # (Q, M): keys each query can see in this layer (masks hide some)
        chance[layer] = (((chosen > 0) & seen).sum(-1) / seen.sum(-1).clip(min=1)).mean()
        if column is not None:
            # the keys' weight from the other queries that can see one of them (a sliding window keeps the
            # keys from far queries, whose zeros would hide a column pattern)
            on_keys = np.asarray(layer_p[:, others][:, :, keys], dtype=np.float32)  # (H, O, K)
            can = (on_keys > 0).any(axis=(0, 2))  # (O,)
            can = can if can.any() else np.ones_like(can)
            column[layer] = (on_keys.sum(-1) * can).sum(-1) / can.sum()
    return Found(score, column, chance, len(queries))
