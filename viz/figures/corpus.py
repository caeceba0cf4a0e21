"""Figures of every head across a corpus: all heads on two metrics, one metric's spread per head."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from viz.figures.common import Theme, as_array, set_export_width, style
from viz.figures.layout import figure, relayout, update_axes
from viz.figures.text import thinned, tick_budget


def head_scatter(
    x, y, layers, heads, *, x_name: str, y_name: str, title: str | None = None, theme: Theme | None = None
) -> go.Figure:
    """One dot per head at (mean x, mean y), coloured by layer, labelled "L3H5" on hover; a click reports
    (layer, head). x, y, layers, heads: (K,)."""
    x, y = as_array("x", x, 1).astype(float), as_array("y", y, 1).astype(float)
    layers, heads = np.asarray(layers, dtype=int), np.asarray(heads, dtype=int)
    if not len(x) == len(y) == len(layers) == len(heads):
        raise ValueError("x, y, layers and heads must have one entry per head")
    theme = theme or Theme()
    labels = [f"L{a}H{b}" for a, b in zip(layers, heads, strict=True)]
    fig = figure(
        go.Scatter(
            x=x,
            y=y,
            mode="markers",
            marker={
                "size": 11 * theme.line_scale,
                "color": layers,
                "colorscale": theme.colorscale,
                "colorbar": {"title": {"text": "layer"}},
                "line": {"width": 0.5, "color": theme.colors["text"]},
            },
            text=labels,
            customdata=np.column_stack([layers, heads]).tolist(),
            hovertemplate=f"%{{text}}<br>{x_name}: %{{x:.3f}}<br>{y_name}: %{{y:.3f}}<extra></extra>",
            name="heads",
        )
    )
    update_axes(fig, "x", title={"text": x_name})
    update_axes(fig, "y", title={"text": y_name})
    relayout(fig, clickmode="event+select")
    return style(fig, theme, title=title, height=560 if theme.presentation else 480)


def metric_boxes(stats, labels: list[str], *, metric: str, title: str | None = None, theme: Theme | None = None):
    """One box per head from precomputed statistics: stats (K, 5) = min, lower quartile, median, upper quartile,
    max over the documents; labels: K head names ("L0H1")."""
    s = as_array("stats", stats, 2).astype(float)
    if s.shape != (len(labels), 5):
        raise ValueError(f"stats must be ({len(labels)}, 5), got {s.shape}")
    theme = theme or Theme()
    fig = figure(
        go.Box(
            x=labels,
            lowerfence=s[:, 0],
            q1=s[:, 1],
            median=s[:, 2],
            q3=s[:, 3],
            upperfence=s[:, 4],
            marker={"color": theme.colors["accent"]} if "accent" in theme.colors else None,
            name=metric,
            hoverinfo="x+y",
        )
    )
    width = int(max(900, min(2400, 16 * len(labels) + 260)))
    update_axes(fig, "x", type="category", tickangle=-90, **thinned(labels, tick_budget(width - 260, theme.sizes.tick)))
    update_axes(fig, "y", title={"text": metric})
    return style(set_export_width(fig, width), theme, title=title, height=520 if theme.presentation else 440)
