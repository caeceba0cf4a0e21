"""A learned attention sink drawn beside a head's map: gpt-oss gives every head a logit that takes part in each
row's softmax but belongs to no token, so a row's weights on the tokens sum to less than 1. Its share of each row
is drawn as its own column on the same colour scale, apart from the tokens, so no row looks renormalised."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from viz.figures.common import Theme
from viz.figures.layout import relayout

SINK_LABEL = "sink"
HOVER_SINK = "query: %{y}<br>the learned sink takes %{z:.5f} of this row<extra></extra>"


def sink_rows(sink, rows: slice | None = None, edges: np.ndarray | None = None) -> np.ndarray:
    """The sink's share (N,) for the rows drawn: a window of them (``rows``), block-averaged like the map's rows
    when it was fitted to the screen (``edges``)."""
    s = np.asarray(sink, dtype=np.float64)
    s = s[rows] if rows is not None else s
    if edges is not None:
        s = np.add.reduceat(s, edges[:-1]) / np.diff(edges)
    return s.astype(np.float32)


def add_sink_column(
    fig: go.Figure, sink: np.ndarray, y: list[str], zmin: float, zmax: float, colorscale, theme: Theme
) -> None:
    """The sink's share of each row (R,) as one column right of the map (x axis 2), the map's colours."""
    fig.add_trace(
        go.Heatmap(
            z=np.asarray(sink, dtype=np.float32)[:, None],
            x=[SINK_LABEL],
            y=y,
            zmin=zmin,
            zmax=zmax,
            colorscale=colorscale,
            showscale=False,
            hovertemplate=HOVER_SINK,
            texttemplate="%{z:.0%}" if len(y) <= 40 else None,  # readable on any colour, each row's share
            textfont={"size": theme.sizes.tick},
            xaxis="x2",
            yaxis="y",
            name=SINK_LABEL,
        )
    )
    relayout(
        fig,
        xaxis={"domain": [0.0, 0.9]},
        xaxis2={
            "domain": [0.93, 1.0],
            "type": "category",
            "tickfont": {"size": theme.sizes.tick},
            "tickangle": 0,
            "title": {"text": "no token"},
        },
    )
