"""Position inside the scores: one query's score to every key split into the terms that make it (DeBERTa's
content→content, content→position, position→content; T5's and MPNet's content and relative bias)."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from viz.figures.common import CHAR_EM, Theme, style, thinned, tick_budget, token_labels
from viz.figures.layout import figure, relayout, update_axes

#: each term's colour: content in blue, position terms in orange shades (Okabe–Ito, readable when colour-blind)
COLOURS = {"content": "#0072b2", "c2p": "#e69f00", "p2c": "#d55e00", "bias": "#e69f00"}


def score_split(
    tokens,
    terms: dict[str, np.ndarray],
    names: dict[str, str],
    *,
    title: str | None = None,
    theme: Theme | None = None,
    mark: int | None = None,
) -> go.Figure:
    """One bar per key, stacked from the score's terms (``terms``: name -> (M,) values, −inf-free; ``names``: what
    the legend calls each), and a black diamond at their sum, the score the softmax reads. Key ``mark`` (the one the
    caption names) is outlined."""
    theme = theme or Theme()
    labels = token_labels(tokens, theme.positions)
    total = np.sum([np.asarray(v, dtype=np.float64) for v in terms.values()], axis=0)  # (M,)
    fig = figure()
    for key, values in terms.items():
        fig.add_trace(
            go.Bar(
                x=labels,
                y=list(np.asarray(values, dtype=np.float64)),
                name=names[key],
                marker_color=COLOURS.get(key, "#999999"),
                marker_line={"width": [3 if i == mark else 0 for i in range(len(labels))], "color": "#000000"},
                hovertemplate=f"{names[key]}<br>%{{x}}: %{{y:.3f}}<extra></extra>",
            )
        )
    fig.add_trace(
        go.Scatter(
            x=labels,
            y=list(total),
            mode="markers",
            name="= score",
            marker={"symbol": "diamond", "size": 10, "color": "#000000"},
            hovertemplate="score<br>%{x}: %{y:.3f}<extra></extra>",
        )
    )
    relayout(fig, barmode="relative")
    axis = thinned(labels, tick_budget(1000, theme.sizes.tick))
    update_axes(fig, "x", type="category", title={"text": "key token"}, **axis)
    update_axes(fig, "y", title={"text": "score"}, zeroline=True)
    longest = max((len(t) for t in axis["ticktext"]), default=0) if len(labels) > 12 else 0
    height = (480 if theme.presentation else 440) + int(min(240, longest * CHAR_EM * theme.sizes.tick))
    return style(fig, theme, title=title, height=height + int(2.4 * theme.sizes.base), legend=True)
