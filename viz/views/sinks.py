"""Beyond the weights → Sinks and head types: every head's share of each query's weight on a sink target ([CLS],
[SEP], punctuation, position 0), sink heads marked, and every head's type. On a long text, from the text read whole
(model/long.py's streamed statistics), as the sink lesson and the head gallery read it: one number per head on
every page."""

from __future__ import annotations

import numpy as np

from model.analysis.sinks import (
    HEAD_TYPES,
    SINK_TARGETS,
    SINK_THRESHOLD,
    first_target,
    head_types,
    present_targets,
    sink_heads,
    sink_shares,
    streamed_types,
    target_columns,
)
from viz.figures.common import Theme, with_subtitle
from viz.figures.decoder import head_scores
from viz.figures.mixing import type_grid
from viz.figures.text import pct
from viz.views.attention import subtitle
from viz.views.base import Captioned, Source, ViewUnavailableError, view


def shown_tokens(src: Source) -> tuple[list[str], np.ndarray, bool]:
    """The tokens, special flags and causality the section measures: the text read whole when a page read it."""
    long = src.long
    if long is not None:
        return long.tokens, long.special, long.causal
    return src.obs.tokens, src.obs.special, src.obs.causal


@view("sinks", page="mixing")
def sinks(src: Source, theme: Theme, *, sink: str = ""):
    """Per head the mean share of each query's weight on one sink target ("": position 0 in a causal model, else the
    first this text has), sink heads marked; and every head's type."""
    tokens, special, causal = shown_tokens(src)
    present = present_targets(tokens, special)
    sink = sink or first_target(tokens, special, causal)
    if sink not in SINK_TARGETS:
        raise ViewUnavailableError(f"choose a sink target from {', '.join(SINK_TARGETS)}")
    if sink not in present:  # a grid of zeros would say nothing: no head can weigh a token the text lacks
        raise ViewUnavailableError(
            f"this text has no {sink} token (the tokenizer of {src.loaded.name} adds none): choose "
            + " or ".join(present)
        )
    if src.long is not None:  # every query of the text, streamed once (the same means, block by block)
        stats = src.long.stats()
        shares = {t: stats[t] for t in SINK_TARGETS}
        labels = streamed_types(stats, causal)
    else:
        shares = sink_shares(src.obs.patterns, tokens, special, causal)
        labels = head_types(src.obs.patterns, tokens, special, causal)
    whole = f", all {len(tokens):,} tokens" if src.long is not None else ""
    flagged = sink_heads(shares)
    grid = head_scores(
        shares[sink], title=f"Share of each query's weight on {sink}{whole}", value_name="share",
        threshold=SINK_THRESHOLD, theme=theme,
    )  # fmt: skip
    types = type_grid(labels, HEAD_TYPES, title=f"What each head mostly does{whole}", theme=theme)
    counts = {t: int((shares[t] >= SINK_THRESHOLD).sum()) for t in present}
    absent = [t for t in SINK_TARGETS if t not in present]
    columns = target_columns(tokens, special)
    first = [t for t in ("[CLS]", "[SEP]") if t in present and np.array_equal(columns[t], columns["position 0"])]
    same = {"position 0": first[0]} if first else {}  # [CLS] at position 0 is one column: counted once
    total = labels.size
    strongest = np.unravel_index(int(shares[sink].argmax()), shares[sink].shape)
    over = f"Over all {len(tokens):,} tokens, " if src.long is not None else ""
    caption = (
        f"{over}{int(flagged.sum())} of {total} heads are sinks (at least {pct(SINK_THRESHOLD)} of each query's "
        "weight on one target, averaged over the queries that can see it): "
        + ", ".join(f"{counts[t]} on {t}" for t in present if t not in same)
        + "".join(f" ({t} is {same[t]} here: the same heads)" for t in same)
        + (f" (this text has no {' or '.join(absent)})" if absent else "")
        + f". The strongest on {sink}: L{strongest[0]}H{strongest[1]} ({pct(shares[sink].max())})."
    )
    kinds = {t: int((labels == t).sum()) for t in HEAD_TYPES if (labels == t).any()}
    type_caption = (
        "Head types from the same " + ("statistics" if src.long is not None else "patterns")
        + f" (a label when one target or offset holds at least {pct(SINK_THRESHOLD)}; broad = nearly uniform "
        "rows): " + ", ".join(f"{n} {t}" for t, n in kinds.items()) + "."
    )  # fmt: skip
    return {
        "share": Captioned(with_subtitle(grid, subtitle(src), theme), caption),
        "types": Captioned(with_subtitle(types, subtitle(src), theme), type_caption),
    }
