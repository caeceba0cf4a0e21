"""Model overview: every layer × head as a thumbnail, tiled into one light-weight heatmap."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from viz.figures.common import Theme, as_array, downsample, style
from viz.figures.layout import add_shapes, figure, relayout, update_axes

THUMB = 32  # thumbnails are at most THUMB × THUMB cells, whatever the sequence length


def tile_thumbnails(patterns: np.ndarray, size: int = THUMB) -> tuple[np.ndarray, int]:
    """(L, H, N, M) -> one (L*(t+1), H*(t+1)) float16 mosaic with NaN gutters, and t. A thumbnail of r × c cells
    (M ≠ N: cross-attention, the target's N queries on the source's M keys) sits in the top left of its t × t slot,
    t = max(r, c)."""
    p = as_array("patterns", patterns, 4)
    L, H = p.shape[:2]
    thumbs = downsample(p.astype(np.float32, copy=False), size)  # (L, H, r, c), all heads at once
    thumbs = thumbs / np.maximum(thumbs.max(axis=(-2, -1), keepdims=True), 1e-12)  # each head on its own scale
    r, c = thumbs.shape[-2:]
    t = max(r, c)
    mosaic = np.full((L, t + 1, H, t + 1), np.nan, dtype=np.float32)
    mosaic[:, :r, :, :c] = thumbs.transpose(0, 2, 1, 3)  # (L, r, H, c)
    return mosaic.reshape(L * (t + 1), H * (t + 1)).astype(np.float16), t


def model_overview(
    patterns,
    *,
    title: str | None = None,
    theme: Theme | None = None,
    selected: tuple[int, int] | None = None,
    layer_labels: list[str] | None = None,
) -> go.Figure:
    """All heads at a glance; click a head (its centre marker) to select it. patterns: (L, H, N, N);
    ``layer_labels``: one tick label per layer (default "L0", "L1", …; "L1 w6" marks a sliding-window layer)."""
    p = as_array("patterns", patterns, 4)
    L, H = p.shape[:2]
    mosaic, t = tile_thumbnails(p)
    theme = theme or Theme()
    fig = figure(
        go.Heatmap(
            z=mosaic.astype(np.float32), colorscale=theme.colorscale, showscale=False, hoverinfo="skip", zmin=0, zmax=1
        )
    )
    cy, cx = np.meshgrid(np.arange(L) * (t + 1) + (t - 1) / 2, np.arange(H) * (t + 1) + (t - 1) / 2, indexing="ij")
    layer_idx, head_idx = np.meshgrid(np.arange(L), np.arange(H), indexing="ij")
    cell = 70 if H <= 12 else 50
    deep = L > 16  # e.g. SmolLM2's 30 layers: square thumbnails of 50 px, a taller figure that scrolls
    height = int(min(1200 if not deep else 140 + 52 * L, 140 + cell * L * (1.3 if theme.presentation else 1)))
    fig.add_trace(
        go.Scatter(
            x=cx.ravel(),
            y=cy.ravel(),
            mode="markers",
            # one transparent square per thumbnail, about its size: plotly reports a click on a marker
            marker={"size": max(10, int(0.8 * (height - 140) / L)), "color": "rgba(0,0,0,0)", "symbol": "square"},
            customdata=np.column_stack([layer_idx.ravel(), head_idx.ravel()]).tolist(),  # lists: see heatmaps.py
            hovertemplate="layer %{customdata[0]}, head %{customdata[1]}<extra></extra>",
            name="heads",
            showlegend=False,
        )
    )
    if selected is not None:
        lay, hd = selected
        x0, y0 = hd * (t + 1) - 0.5, lay * (t + 1) - 0.5
        add_shapes(fig, dict(type="rect", x0=x0, y0=y0, x1=x0 + t, y1=y0 + t, line={"color": "#e03131", "width": 3}))
    # Tick labels say "L3" and "H1": no axis titles (a top axis title would collide with the figure title).
    # The ranges end at the thumbnails' edges: autorange would pad them for the click markers' size (a blank band
    # of about half a thumbnail on every side).
    update_axes(
        fig,
        "y",
        range=[L * (t + 1) - 1.5, -0.5],  # reversed: layer 0 on top
        **({"scaleanchor": "x"} if deep else {}),
        tickvals=np.arange(L) * (t + 1) + (t - 1) / 2,
        ticktext=layer_labels if layer_labels is not None and len(layer_labels) == L else [f"L{i}" for i in range(L)],
        showgrid=False,
        zeroline=False,
    )
    update_axes(
        fig,
        "x",
        range=[-0.5, H * (t + 1) - 1.5],
        tickvals=np.arange(H) * (t + 1) + (t - 1) / 2,
        ticktext=[f"H{i}" for i in range(H)],
        showgrid=False,
        zeroline=False,
        side="top",
        **({"constrain": "domain", "constraintoward": "left"} if deep else {}),  # square thumbnails, labels beside
    )
    style(fig, theme, title=title, height=height)
    relayout(fig, clickmode="event+select")  # a click selects a marker (a box-select drag mode would eat it)
    return fig


def ranked_heads(
    patterns,
    labels: list[str],
    heads: list[tuple[int, int]],
    *,
    rows=(),
    cols=(),
    title: str | None = None,
    theme: Theme | None = None,
) -> go.Figure:
    """Chosen heads' thumbnails in a row, in the order given (e.g. strongest first); click one to open it.

    patterns: (K, N, N) the heads' patterns; labels: K tick labels under them; heads: their (layer, head).
    ``rows``/``cols``: query/key positions outlined in every thumbnail (the block holding them, when a
    thumbnail averages blocks of tokens)."""
    p = as_array("patterns", patterns, 3)
    k = p.shape[0]
    if len(labels) != k or len(heads) != k:
        raise ValueError(f"{k} thumbnails need {k} labels and heads, got {len(labels)} and {len(heads)}")
    mosaic, t = tile_thumbnails(p[None])  # (t, K*(t+1)): one row
    theme = theme or Theme()
    fig = figure(
        go.Heatmap(
            z=mosaic.astype(np.float32), colorscale=theme.colorscale, showscale=False, hoverinfo="skip", zmin=0, zmax=1
        )
    )
    centres = np.arange(k) * (t + 1) + (t - 1) / 2
    fig.add_trace(
        go.Scatter(
            x=centres,
            y=np.full(k, (t - 1) / 2),
            mode="markers",
            marker={"size": 60, "color": "rgba(0,0,0,0)", "symbol": "square"},  # click targets over the thumbnails
            customdata=[list(h) for h in heads],
            hovertext=labels,
            hovertemplate="%{hovertext}<extra></extra>",
            name="heads",
            showlegend=False,
        )
    )
    n = p.shape[-1]
    outlines = []
    for i in range(k):
        x0 = i * (t + 1) - 0.5
        for r in rows:  # the query's row
            y = int(r) * t // n - 0.5
            outlines.append(dict(type="rect", x0=x0, x1=x0 + t, y0=y, y1=y + 1, line={"color": "#3b5bdb", "width": 2}))
        for c in cols:  # the key's column
            x = x0 + int(c) * t // n
            outlines.append(
                dict(type="rect", x0=x, x1=x + 1, y0=-0.5, y1=t - 0.5, line={"color": "#e8590c", "width": 2})
            )
    add_shapes(fig, *outlines)
    update_axes(
        fig, "y", autorange="reversed", showticklabels=False, ticks="", showgrid=False, zeroline=False, scaleanchor="x"
    )
    update_axes(fig, "x", tickvals=centres, ticktext=labels, showgrid=False, zeroline=False)
    style(fig, theme, title=title, height=300 if theme.presentation else 260)
    relayout(fig, clickmode="event+select")
    return fig
