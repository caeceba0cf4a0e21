"""The find-heads view: every head ranked by its weight on chosen (query, key) pairs, the strongest as
thumbnails to click, column patterns flagged."""

from __future__ import annotations

import numpy as np

from model.analysis.find import RELATIONS, Found, find_heads, relation_pairs, token_pairs, word_ids
from viz.figures import ranked_heads
from viz.figures.common import Theme, with_subtitle
from viz.figures.gallery import THUMB
from viz.figures.text import small
from viz.views.attention import subtitle
from viz.views.base import Captioned, Source, ViewUnavailableError, view
from viz.views.captions import quoted_at
from viz.views.head_captions import found_heads

#: what each relation looks for, as the page offers it
RELATION_LABELS = {
    "tokens": "tokens I pick",
    "previous": "the previous token",
    "next": "the next token",
    "same token": "the same token elsewhere",
    "same word": "the other pieces of the same word",
    "special": "special tokens ([CLS], [SEP], …)",
    "punctuation": "punctuation",
}
assert tuple(RELATION_LABELS) == RELATIONS
#: an encoder–decoder's decoder: target tokens (queries) picked against source tokens (keys), in its cross-attention
SOURCE = "source tokens"


def found_for(src: Source, relation: str, queries: tuple[int, ...], keys: tuple[int, ...]) -> tuple[Found, str]:
    """(the ranking, what was looked for in words). Raises ViewUnavailableError when there is nothing to rank."""
    obs = src.obs
    n = obs.n_tokens
    if relation == SOURCE:
        from viz.views.cross import source_tokens

        names = source_tokens(src)  # refuses a model without cross-attention
        queries = tuple(q for q in queries if 0 <= q < n)
        keys = tuple(k for k in keys if 0 <= k < len(names))
        if not queries or not keys:
            raise ViewUnavailableError("Pick at least one target token and one source token.")
        pairs = np.zeros((n, len(names)), dtype=bool)
        pairs[np.ix_(queries, keys)] = True
        what = (
            " ".join(quoted_at(obs.tokens, q) for q in queries)
            + " → source "
            + " ".join(quoted_at(names, k) for k in keys)
        )
        return find_heads(obs.cross, pairs, obs.special), what
    long = src.long  # a long text read whole: every token, from its streamed statistics and exact rows
    tokens = long.tokens if long is not None else obs.tokens
    n = len(tokens)
    if relation == "tokens":
        queries = tuple(q for q in queries if 0 <= q < n)
        keys = tuple(k for k in keys if 0 <= k < n)
        if not queries or not keys:
            raise ViewUnavailableError("Pick at least one query token and one key token.")
        what = " ".join(quoted_at(tokens, q) for q in queries) + " → " + " ".join(quoted_at(tokens, k) for k in keys)
        if long is not None:
            return src.long_found(relation, queries, keys), what
        pairs = token_pairs(n, queries, keys)
    else:
        if relation not in RELATIONS:
            raise ValueError(f"unknown relation {relation!r}")
        what = f"Each token → {RELATION_LABELS[relation]}"
        none = ViewUnavailableError(f"This text has no pair for “{RELATION_LABELS[relation]}”.")
        if long is not None:
            try:
                return src.long_found(relation, (), ()), what
            except ValueError:
                raise none from None
        pairs = relation_pairs(relation, obs.tokens, obs.special, word_ids(obs.text, obs.offsets, obs.special))
        if not pairs.any():
            raise none
    return find_heads(obs.patterns, pairs, obs.special), what


def head_labels(found: Found, heads: list[tuple[int, int]]) -> list[str]:
    return [
        f"L{lay}H{hd}<br>{small(found.score[lay, hd])}" + (" · column" if found.flagged[lay, hd] else "")
        for lay, hd in heads
    ]


@view("find", page="find")
def find(
    src: Source,
    theme: Theme,
    *,
    relation: str = "previous",
    queries: tuple[int, ...] = (),
    keys: tuple[int, ...] = (),
    top: int = 8,
):
    """The ``top`` heads with the most weight on the chosen pairs, strongest first (click one to open it)."""
    found, what = found_for(src, relation, tuple(queries), tuple(keys))
    heads = found.ranking()[: max(1, top)]
    chosen = relation in ("tokens", SOURCE)
    rows, cols = (tuple(queries), tuple(keys)) if chosen else ((), ())
    whole = ""
    if src.long is not None and relation != SOURCE:  # block means pooled from the summary: no N × N pattern
        pooled, bounds = src.long.pooled(THUMB, [lay for lay, _ in heads])  # (K, H, t, t), (t + 1,)
        patterns = pooled[np.arange(len(heads)), [hd for _, hd in heads]]  # (K, t, t)
        rows, cols = (tuple(np.searchsorted(bounds, list(p), side="right") - 1) for p in (rows, cols))  # their cells
        whole = f", all {src.long.n_tokens:,} tokens"
    else:
        every = src.obs.cross if relation == SOURCE else src.obs.patterns
        patterns = np.stack([every[lay, hd] for lay, hd in heads])  # (K, N, N), or (K, N, S) of cross-attention
    kind = "cross-attention heads" if relation == SOURCE else "heads"
    fig = ranked_heads(
        patterns,
        head_labels(found, heads),
        heads,
        rows=rows,
        cols=cols,
        title=f"The {len(heads)} {kind} with most weight on {what.removeprefix('Each token → ')}{whole}",
        theme=theme,
    )
    caption = found_heads(what, found.score, found.column, found.flagged, found.chance, found.n_queries, len(heads))
    return Captioned(with_subtitle(fig, subtitle(src), theme), caption)


COREFERENCE = "The animal didn't cross the street because it was too tired."


def lesson_map(src: Source, specs: list) -> list[dict]:
    """Measure, on each model, what the classic lessons need: the head linking “it” to “animal” in the
    coreference sentence, the strongest previous-token head, a masked-word head, the kind of positions.
    specs: the ModelSpecs to measure (each is loaded and run once, through ``src``'s caches)."""
    rows = []
    for spec in specs:
        obs, loaded = src.other(spec=spec, text=COREFERENCE)
        prev = find_heads(obs.patterns, relation_pairs("previous", obs.tokens, obs.special), obs.special)
        pl, ph = prev.ranking()[0]
        linked = {"“it” → “animal”: best head": "“animal” is split into pieces", "its weight": float("nan")}
        linked["a column pattern?"] = None
        if "it" in obs.tokens and "animal" in obs.tokens:
            pairs = token_pairs(obs.n_tokens, [obs.tokens.index("it")], [obs.tokens.index("animal")])
            link = find_heads(obs.patterns, pairs, obs.special)
            lay, hd = link.ranking()[0]
            linked = {
                "“it” → “animal”: best head": f"L{lay}H{hd}",
                "its weight": float(link.score[lay, hd]),
                "a column pattern?": bool(link.flagged[lay, hd]),
            }
        rows.append(
            {
                "model": loaded.name,
                **linked,
                "previous token: best head": f"L{pl}H{ph}",
                "its weight ": float(prev.score[pl, ph]),
                "fills in [MASK]": loaded.has_mlm,
                "positions": loaded.model.cfg.positional,
            }
        )
    return rows
