"""BertViz-style head view: query tokens left, key tokens right, line opacity = attention weight."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from viz.figures.common import Theme, as_array, check_labels, style, unique_labels

HEAD_COLOURS = (
    "#0072B2",
    "#E69F00",
    "#009E73",
    "#CC79A7",
    "#56B4E9",
    "#D55E00",
    "#F0E442",
    "#000000",
    "#7f7f7f",
    "#8c564b",
    "#17becf",
    "#bcbd22",
)  # Okabe–Ito first: distinguishable with colour-blindness
LEVELS = 8  # opacity buckets: one trace per (head, bucket) instead of one per line


def head_view(
    weights,
    tokens,
    *,
    head_labels=None,
    threshold: float = 0.05,
    title: str | None = None,
    theme: Theme | None = None,
) -> go.Figure:
    """Lines from each query token (left) to each key token (right) for one or several heads.

    weights: (H, N, N); lines with weight below ``threshold`` are hidden. Each head has its own colour.
    """
    w = as_array("weights", weights, 3).astype(np.float32)
    h, n, m = w.shape
    labels = check_labels("tokens", tokens, n)
    if n != m:
        raise ValueError("head view needs square (self-attention) patterns")
    head_labels = [f"head {i}" for i in range(h)] if head_labels is None else [str(x) for x in head_labels]
    theme = theme or Theme()
    ys = -np.arange(n, dtype=float)
    fig = go.Figure()
    top = float(np.nanmax(w)) if w.size else 1.0
    for i in range(h):
        colour = HEAD_COLOURS[i % len(HEAD_COLOURS)]
        q_idx, k_idx = np.nonzero(w[i] >= max(threshold, 1e-12))
        vals = w[i][q_idx, k_idx]
        bucket = np.minimum((vals / max(top, 1e-12) * LEVELS).astype(int), LEVELS - 1)
        first = True
        for level in range(LEVELS - 1, -1, -1):  # strongest first, so the legend entry is the boldest
            sel = bucket == level
            if not sel.any():
                continue
            xs = np.tile([0.0, 1.0, np.nan], sel.sum())
            yy = np.column_stack([ys[q_idx[sel]], ys[k_idx[sel]], np.full(sel.sum(), np.nan)]).ravel()
            fig.add_trace(
                go.Scatter(
                    x=xs,
                    y=yy,
                    mode="lines",
                    line={"color": colour, "width": 2.0 * theme.line_scale},
                    opacity=0.15 + 0.85 * (level + 1) / LEVELS,
                    hoverinfo="skip",
                    showlegend=first,
                    legendgroup=head_labels[i],
                    name=head_labels[i],
                )
            )
            first = False
    text = unique_labels(labels)
    for x, anchor in ((0.0, "left"), (1.0, "right")):  # labels outside the lines
        fig.add_trace(
            go.Scatter(
                x=np.full(n, x),
                y=ys,
                mode="markers+text",
                text=text,
                textposition=f"middle {anchor}",
                marker={"size": 6, "color": "#555"},
                showlegend=False,
                hovertemplate=("query" if x == 0 else "key") + ": %{text}<extra></extra>",
            )
        )
    fig.update_xaxes(visible=False, range=[-0.6, 1.6])
    fig.update_yaxes(visible=False, range=[-n + 0.3, 0.8])
    style(fig, theme, title=title, height=max(360, 22 * n * (1.4 if theme.presentation else 1) + 120))
    fig.update_layout(legend={"orientation": "h", "y": 1.02, "x": 0.0, "yanchor": "bottom"})
    return fig
