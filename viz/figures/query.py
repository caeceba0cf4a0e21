"""Queries and keys: one query's weights term by term, and queries and keys in one plane."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from viz.figures.common import Theme, as_array, check_labels, style, unique_labels


def query_explained(qe, tokens, query_label: str, *, theme: Theme | None = None) -> go.Figure:
    """q ⊙ k_j per dimension (left), then their sums, the scaled scores and the softmax weights (right)."""
    theme = theme or Theme()
    keys = unique_labels(tokens)
    m, d = qe.products.shape
    fig = make_subplots(
        rows=1,
        cols=4,
        column_widths=[0.46, 0.18, 0.18, 0.18],
        shared_yaxes=True,
        horizontal_spacing=0.02,
        subplot_titles=(f"q ⊙ kⱼ ({m}×{d})", "q·kⱼ (sum)", "scaled (+mask)", "softmax weight"),
    )
    bound = float(np.abs(qe.products).max()) or 1.0
    fig.add_trace(
        go.Heatmap(
            z=qe.products,
            y=keys,
            x=[f"d{j}" for j in range(d)],
            colorscale=theme.diverging,
            zmin=-bound,
            zmax=bound,
            showscale=False,
            hovertemplate="key: %{y}<br>%{x}: q·k part %{z:.4f}<extra></extra>",
        ),
        1,
        1,
    )
    scaled = np.where(np.isfinite(qe.scaled), qe.scaled, np.nan)
    for col, vals, name, colour in (
        (2, qe.scores, "q·k", "#868e96"),
        (3, scaled, "scaled", "#4263eb"),
        (4, qe.weights, "weight", "#e8590c"),
    ):
        fig.add_trace(
            go.Bar(
                x=vals,
                y=keys,
                orientation="h",
                marker_color=colour,
                name=name,
                showlegend=False,
                hovertemplate=f"key: %{{y}}<br>{name}: %{{x:.4f}}<extra></extra>",
            ),
            1,
            col,
        )
    fig.update_yaxes(autorange="reversed", type="category")
    style(fig, theme, title=f"How query “{query_label}” weighs every key", height=max(320, 22 * m + 140))
    return fig


def qk_scatter(coords_q, coords_k, tokens, ratio, *, title: str | None = None, theme: Theme | None = None):
    """Queries (circles) and keys (diamonds) in one 2-D PCA plane, coloured by position."""
    cq = as_array("coords_q", coords_q, 2)
    ck = as_array("coords_k", coords_k, 2)
    labels = check_labels("tokens", tokens, cq.shape[0])
    theme = theme or Theme()
    pos = np.arange(len(labels))
    fig = go.Figure()
    for coords, name, symbol in ((cq, "queries", "circle"), (ck, "keys", "diamond")):
        fig.add_trace(
            go.Scatter(
                x=coords[:, 0],
                y=coords[:, 1],
                mode="markers+text",
                name=name,
                text=unique_labels(labels),
                textposition="top center",
                customdata=pos,
                marker={
                    "symbol": symbol,
                    "size": 11 * theme.line_scale,
                    "color": pos,
                    "colorscale": theme.colorscale,
                    "line": {"width": 1, "color": "#333"},
                    "showscale": name == "keys",
                    "colorbar": {"title": {"text": "position"}},
                },
                hovertemplate=f"{name[:-1]} %{{text}} (position %{{customdata}})<extra></extra>",
            )
        )
    fig.update_xaxes(title_text=f"PC1 ({ratio[0]:.0%} of variance)")
    fig.update_yaxes(title_text=f"PC2 ({ratio[1]:.0%} of variance)")
    style(fig, theme, title=title, height=560)
    fig.update_layout(legend={"orientation": "h", "y": -0.15})
    return fig
