"""The gallery of specialised heads: one row per kind of head, its strongest heads as thumbnails with their
score under them (a click reports [layer, head]); and the kinds counted for two models side by side."""

from __future__ import annotations

import html

import numpy as np
import plotly.graph_objects as go

from viz.figures.common import Theme, as_array, boxed, downsample, style
from viz.figures.layout import add_annotations, figure, relayout, update_axes

THUMB = 24  # cells per thumbnail side
GAP = 9  # rows of gap under each row of thumbnails (their labels sit there)


def head_gallery(rows: list[dict], *, title: str | None = None, theme: Theme | None = None) -> go.Figure:
    """``rows``: [{"kind": name, "patterns": (K, N, N), "labels": K strings, "heads": K (layer, head),
    "hover": K sentences}], strongest first in each row."""
    theme = theme or Theme()
    if not rows:
        raise ValueError("the gallery needs at least one kind")
    n_cols = max(len(r["heads"]) for r in rows)
    t = min(THUMB, max(as_array("patterns", r["patterns"], 3).shape[-1] for r in rows))
    step_x, step_y = t + 2, t + GAP
    mosaic = np.full((len(rows) * step_y, n_cols * step_x), np.nan, dtype=np.float32)
    xs, ys, data, hover, notes = [], [], [], [], []
    for i, row in enumerate(rows):
        p = as_array("patterns", row["patterns"], 3).astype(np.float32)
        if not (len(row["labels"]) == len(row["heads"]) == len(row["hover"]) == p.shape[0]):
            raise ValueError(f"row {row['kind']!r}: one label, head and sentence per thumbnail")
        thumbs = downsample(p, t)
        thumbs = thumbs / np.maximum(thumbs.max(axis=(-2, -1), keepdims=True), 1e-12)  # each on its own scale
        size = thumbs.shape[-1]
        for j, thumb in enumerate(thumbs):
            y0, x0 = i * step_y, j * step_x
            mosaic[y0 : y0 + size, x0 : x0 + size] = thumb
            xs.append(x0 + (size - 1) / 2)
            ys.append(y0 + (size - 1) / 2)
            data.append(list(row["heads"][j]))
            hover.append(html.escape(row["hover"][j]))
            notes.append(
                {
                    "x": x0 + (size - 1) / 2,
                    "y": y0 + size + 0.5,
                    "yanchor": "top",
                    "showarrow": False,
                    "text": html.escape(row["labels"][j]),
                    "font": {"size": theme.sizes.tick, "color": theme.colors["text"]},
                }
            )
    fig = figure(go.Heatmap(z=mosaic, colorscale=theme.colorscale, showscale=False, hoverinfo="skip", zmin=0, zmax=1))
    fig.add_trace(
        go.Scatter(
            x=xs,
            y=ys,
            mode="markers",
            marker={"size": 44 * theme.line_scale, "color": "rgba(0,0,0,0)", "symbol": "square"},
            customdata=data,
            hovertext=hover,
            hovertemplate="%{hovertext}<extra></extra>",
            showlegend=False,
        )
    )
    add_annotations(fig, *notes)
    centres = [i * step_y + (t - 1) / 2 for i in range(len(rows))]
    update_axes(
        fig,
        "y",
        autorange="reversed",
        tickvals=centres,
        ticktext=[html.escape(r["kind"]) for r in rows],
        showgrid=False,
        zeroline=False,
        showline=False,
        ticks="",
        scaleanchor="x",
    )
    update_axes(
        fig,
        "x",
        showticklabels=False,
        showgrid=False,
        zeroline=False,
        range=[-1, max(n_cols, 4) * step_x],
        constrain="domain",
        constraintoward="left",
        ticks="",
        showline=False,
    )
    per_row = 150 if theme.presentation else 118
    height = boxed(theme, 140 + per_row * len(rows), 220 + 170 * n_cols)[1]
    style(fig, theme, title=title, height=height)
    relayout(fig, clickmode="event+select")
    return fig


def kind_counts(counts: dict[str, dict[str, int]], kinds: list[str], *, title=None, theme=None) -> go.Figure:
    """Grouped bars: heads of each kind, one bar per model. counts: {model: {kind: heads}}."""
    theme = theme or Theme()
    colours = ["#e8590c", "#868e96", "#3b5bdb", "#2f9e44"]
    fig = figure()
    for colour, (name, c) in zip(colours, counts.items()):
        values = [c.get(k, 0) for k in kinds]
        fig.add_trace(
            go.Bar(
                y=kinds,
                x=values,
                orientation="h",
                name=name,
                marker_color=colour,
                text=[str(v) for v in values],
                textposition="outside",
                cliponaxis=False,
                hovertemplate=f"{html.escape(name)}: %{{x}} heads %{{y}}<extra></extra>",
            )
        )
    update_axes(fig, "y", type="category", autorange="reversed")
    update_axes(fig, "x", title={"text": "heads"}, rangemode="tozero")
    relayout(fig, barmode="group")
    height = 200 + (70 if theme.presentation else 52) * len(kinds)
    return style(fig, theme, title=title, height=boxed(theme, height)[1], legend=True)
