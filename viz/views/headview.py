"""The head view's static figure (the page draws the interactive one in the browser): the lines of a layer's
heads for a window of tokens, the token in focus standing out as it does on screen."""

from __future__ import annotations

import numpy as np

from viz.figures import Theme, head_view
from viz.figures.common import with_subtitle
from viz.figures.headview import WINDOW
from viz.figures.text import pct
from viz.views.attention import _check, shown_focus, subtitle
from viz.views.base import Captioned, Source, ViewUnavailableError, view
from viz.views.captions import quoted, quoted_at


@view("headview", page="head-view")
def headview(
    src: Source,
    theme: Theme,
    *,
    layer: int = 0,
    heads: tuple[int, ...] = (0,),
    threshold: float = 0.05,
    start: int = 0,
    focus: int = -1,
):
    """``start``: first token of the window of at most WINDOW tokens shown; ``focus``: the query token in focus
    (a token position, -1: none), whose lines stand out as they do on screen when it is picked."""
    obs = src.obs
    heads = tuple(h for h in heads if 0 <= h < obs.n_heads)
    _check(src, layer, 0)
    if not heads:
        raise ViewUnavailableError("pick at least one head")
    if src.long is not None:  # a long text: the window's exact weights, labelled with their positions
        return _long_window(src, theme, layer, heads, threshold, start, focus)
    tokens = obs.shown_tokens(src.hide_special)
    n = len(tokens)
    start = max(0, min(start, n - min(n, WINDOW)))
    fig = head_view(
        obs.shown(obs.patterns[layer], src.hide_special)[list(heads)],
        tokens,
        head_labels=[f"head {h}" for h in heads],
        threshold=threshold,
        window=(start, min(n, start + WINDOW)),
        sink=None if obs.sink is None else obs.sink[layer][list(heads)][:, obs.keep(src.hide_special)],
        title=f"Layer {layer}: head{'s' * (len(heads) > 1)} {', '.join(map(str, heads))}"
        + (f" — {quoted_at(tokens, q)} in focus" if (q := shown_focus(src, focus, -1)[0]) >= 0 else ""),
        theme=theme,
        focus=q,
    )
    if q < 0:
        return with_subtitle(fig, subtitle(src), theme)
    row = obs.shown(obs.patterns[layer], src.hide_special)[list(heads), q]  # (heads, N): the focus token's rows
    caption = "; ".join(
        f"head {h}: {quoted_at(tokens, q)} looks most at {quoted_at(tokens, int(np.argmax(r)))} ({pct(r.max())})"
        for h, r in zip(heads, row)
    )
    return Captioned(with_subtitle(fig, subtitle(src), theme), caption + ".")


def _long_window(src: Source, theme: Theme, layer: int, heads, threshold: float, start: int, focus: int):
    long = src.long
    start = max(0, min(start, long.n_tokens - WINDOW))
    span = (start, start + WINDOW)
    tokens = [f"{t}·{i}" for i, t in enumerate(long.tokens[start : start + WINDOW], start)]
    weights = long.weights(layer, None, span, span)[list(heads)]  # (heads, W, W): keys outside the window not drawn
    q = focus - start if start <= focus < start + WINDOW else -1
    fig = head_view(
        weights, tokens, head_labels=[f"head {h}" for h in heads], threshold=threshold, window=(0, WINDOW),
        title=f"Layer {layer}: head{'s' * (len(heads) > 1)} {', '.join(map(str, heads))}, tokens {start:,}–"
        f"{start + WINDOW - 1:,} of {long.n_tokens:,}" + (f" — {quoted(tokens[q])} in focus" if q >= 0 else ""),
        theme=theme, focus=q,
    )  # fmt: skip
    fig = with_subtitle(fig, subtitle(src), theme)
    if q < 0:
        return fig
    rows = [long.row(layer, h, focus) for h in heads]  # over every key of the text, not only the window's
    caption = "; ".join(
        f"head {h}: {quoted(tokens[q])} looks most at {quoted(long.tokens[int(np.argmax(r))])} "
        f"({int(np.argmax(r)):,}, {pct(r.max())} of its weight over all {long.n_tokens:,} tokens)"
        for h, r in zip(heads, rows)
    )
    return Captioned(fig, caption + ".")
