"""Clickable cells and the focus outline of a token × token heatmap."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from viz.figures.common import Theme
from viz.figures.layout import add_shapes, relayout

FOCUS_QUERY, FOCUS_KEY = "#3b5bdb", "#e8590c"  # the colours of the focus row and column everywhere
SVG_MAX = 4096  # click targets drawn as SVG up to this many cells, on a WebGL canvas beyond


def add_cell_targets(
    fig: go.Figure,
    x: list[str],
    y: list[str],
    z: np.ndarray,
    ids,
    name: str,
    size: float = 14,
    where: str = "query: %{y}<br>key: %{x}",
) -> None:
    """Transparent square markers over every cell: plotly selects markers (not heatmap cells) on click, so a
    click reports the cell's ids; the markers carry the hover text (the heatmap's own is switched off).

    SVG up to ``SVG_MAX`` cells (48 × 48 tokens at most, a grid of layers × heads), WebGL beyond: a WebGL
    canvas costs more to start than a few thousand SVG markers cost to draw. In chromium without a GPU
    (SwiftShader), a page whose attention map has 144 such cells cost 2.7 instead of 4.1 core-seconds to load,
    2,116 cells 4.3–4.8 instead of 8.5 (``docs/development.md``); and a browser keeps only so many WebGL canvases
    alive per page (16 in Chrome): a page of grids would lose its oldest ones' hover and clicks."""
    ids = np.asarray(ids)  # (N, M, j): what a click on each cell reports, e.g. its (query, key) positions
    rows, cols = np.meshgrid(np.arange(len(y)), np.arange(len(x)), indexing="ij")
    values = z[rows, cols].ravel()
    width = ids.shape[-1]
    for trace in fig.data:
        if trace.type == "heatmap":
            trace.hoverinfo = "skip"
    fig.add_trace(
        (go.Scatter if values.size <= SVG_MAX else go.Scattergl)(
            x=[x[j] for j in cols.ravel()],
            y=[y[i] for i in rows.ravel()],
            mode="markers",
            marker={"symbol": "square", "size": size, "color": "rgba(0,0,0,0)"},
            # nested lists, not a 2-D array: plotly.js reads a 2-D typed array's rows wrongly in click events
            customdata=np.column_stack([ids.reshape(-1, width), np.round(np.nan_to_num(values, nan=0.0), 5)]).tolist(),
            hovertemplate=f"{where}<br>{name}: %{{customdata[{width}]:.5f}}<extra></extra>",
            showlegend=False,
            name="cells",
        )
    )
    relayout(fig, clickmode="event+select")


def outline_focus(fig: go.Figure, focus: tuple[int, int], n: int, m: int, theme: Theme) -> None:
    """Outline the focus query's row and the focus key's column (category positions; -1: none)."""
    row, col = focus
    line = {"width": 2.5 * theme.line_scale}
    shapes = []
    if 0 <= row < n:
        shapes.append(dict(x0=-0.5, x1=m - 0.5, y0=row - 0.5, y1=row + 0.5, line={**line, "color": FOCUS_QUERY}))
    if 0 <= col < m:
        shapes.append(dict(x0=col - 0.5, x1=col + 0.5, y0=-0.5, y1=n - 0.5, line={**line, "color": FOCUS_KEY}))
    add_shapes(fig, *({**s, "type": "rect", "layer": "above"} for s in shapes))
