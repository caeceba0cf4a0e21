"""Positional encodings: a table as a heatmap, chosen dimensions as curves, position-to-position similarity."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from viz.figures.common import Theme, as_array, style


def encoding_heatmap(table, *, title: str | None = None, theme: Theme | None = None, x_title: str = "dimension"):
    """A positional table: positions down, dimensions across. table: (P, D)."""
    t = as_array("table", table, 2)
    theme = theme or Theme()
    fig = go.Figure(
        go.Heatmap(
            z=t,
            colorscale=theme.diverging,
            zmid=0,
            hovertemplate=f"position %{{y}}<br>{x_title} %{{x}}<br>value %{{z:.4f}}<extra></extra>",
            colorbar={"title": {"text": "value"}},
        )
    )
    fig.update_yaxes(autorange="reversed", title_text="position")
    fig.update_xaxes(title_text=x_title)
    return style(fig, theme, title=f"{title} — shape {t.shape}" if title else None, height=480)


def encoding_curves(table, dims, *, title: str | None = None, theme: Theme | None = None) -> go.Figure:
    """Chosen dimensions of a positional table as curves over position. table: (P, D)."""
    t = as_array("table", table, 2)
    theme = theme or Theme()
    fig = go.Figure()
    for d in dims:
        if not 0 <= d < t.shape[1]:
            raise ValueError(f"dimension {d} is outside 0..{t.shape[1] - 1}")
        fig.add_trace(
            go.Scatter(
                y=t[:, d],
                mode="lines",
                name=f"dim {d}",
                line={"width": 2 * theme.line_scale},
                hovertemplate=f"dim {d}<br>position %{{x}}<br>%{{y:.4f}}<extra></extra>",
            )
        )
    fig.update_xaxes(title_text="position")
    fig.update_yaxes(title_text="value")
    return style(fig, theme, title=title, height=420, legend=True)


def position_similarity(table, *, title: str | None = None, theme: Theme | None = None) -> go.Figure:
    """Dot products between every pair of position vectors. table: (P, D) -> (P, P) heatmap."""
    t = as_array("table", table, 2).astype(np.float64)
    sim = t @ t.T
    theme = theme or Theme()
    fig = go.Figure(
        go.Heatmap(
            z=sim,
            colorscale=theme.colorscale,
            hovertemplate="position %{y} · position %{x} = %{z:.3f}<extra></extra>",
            colorbar={"title": {"text": "dot product"}},
        )
    )
    fig.update_yaxes(autorange="reversed", title_text="position")
    fig.update_xaxes(title_text="position")
    return style(fig, theme, title=title, height=480)
