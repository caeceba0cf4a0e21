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
from viz.views.captions import quoted


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
    tokens = obs.shown_tokens(src.hide_special)
    n = len(tokens)
    start = max(0, min(start, n - min(n, WINDOW)))
    fig = head_view(
        obs.shown(obs.patterns[layer], src.hide_special)[list(heads)],
        tokens,
        head_labels=[f"head {h}" for h in heads],
        threshold=threshold,
        window=(start, min(n, start + WINDOW)),
        title=f"Layer {layer}: head{'s' * (len(heads) > 1)} {', '.join(map(str, heads))}"
        + (f" — {quoted(tokens[q])} in focus" if (q := shown_focus(src, focus, -1)[0]) >= 0 else ""),
        theme=theme,
        focus=q,
    )
    if q < 0:
        return with_subtitle(fig, subtitle(src), theme)
    row = obs.shown(obs.patterns[layer], src.hide_special)[list(heads), q]  # (heads, N): the focus token's rows
    caption = "; ".join(
        f"head {h}: {quoted(tokens[q])} looks most at {quoted(tokens[int(np.argmax(r))])} ({pct(r.max())})"
        for h, r in zip(heads, row)
    )
    return Captioned(with_subtitle(fig, subtitle(src), theme), caption + ".")
