"""Queries and keys: one query's weights term by term, and queries and keys in one plane."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from viz.figures.common import Theme, as_array, check_labels, style, thinned, tick_budget, token_labels


def query_explained(qe, tokens, query_label: str, *, theme: Theme | None = None) -> go.Figure:
    """q ⊙ k_j per dimension (left), then their sums, the scaled scores and the softmax weights (right).

    qe: a :class:`model.analysis.steps.QueryExplained` for M keys; tokens: M key labels."""
    theme = theme or Theme()
    keys = token_labels(tokens, theme.positions)
    m, d = qe.products.shape
    fig = make_subplots(
        rows=1,
        cols=4,
        column_widths=[0.46, 0.18, 0.18, 0.18],
        shared_yaxes=True,
        horizontal_spacing=0.03,
        subplot_titles=(f"q ⊙ kⱼ ({m}×{d})", "q·kⱼ", "scaled", "weight"),
    )
    bound = float(np.abs(qe.products).max()) or 1.0
    dims = [f"d{j}" for j in range(d)]
    fig.add_trace(
        go.Heatmap(
            z=qe.products,
            y=keys,
            x=dims,
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
    height = max(340, min(940, (26 if theme.presentation else 20) * m + 180))
    fig.update_yaxes(
        autorange="reversed", type="category", **thinned(keys, tick_budget(height - 180, theme.sizes.tick))
    )
    fig.update_xaxes(type="category", nticks=8, row=1, col=1)
    fig.update_xaxes(nticks=4)
    style(fig, theme, title=f"How query “{query_label}” weighs every key", height=height, above=1)
    fig.update_annotations(font={"size": theme.sizes.axis_title, "color": theme.colors["text"]}, yshift=6)
    return fig


def qk_scatter(
    coords_q,
    coords_k,
    tokens,
    ratio,
    *,
    labelled=None,
    title: str | None = None,
    theme: Theme | None = None,
) -> go.Figure:
    """Queries (circles) and keys (diamonds) in one 2-D plane, coloured by position.

    coords_q, coords_k: (N, 2); ratio: the variance share of each axis. ``labelled``: positions whose
    query and key carry a text label (default: the first 8); every point names its token on hover.
    """
    cq = as_array("coords_q", coords_q, 2)
    ck = as_array("coords_k", coords_k, 2)
    theme = theme or Theme()
    labels = token_labels(check_labels("tokens", tokens, cq.shape[0]), theme.positions)
    n = len(labels)
    shown = set(range(min(n, 8)) if labelled is None else (int(i) for i in labelled if 0 <= int(i) < n))
    pos = np.arange(n)
    fig = go.Figure()
    for coords, name, symbol in ((cq, "queries", "circle"), (ck, "keys", "diamond")):
        fig.add_trace(
            go.Scatter(
                x=coords[:, 0],
                y=coords[:, 1],
                mode="markers+text",
                name=name,
                text=[lab if i in shown else "" for i, lab in enumerate(labels)],
                hovertext=labels,
                textposition="top center",
                textfont={"size": theme.sizes.tick},
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
                hovertemplate=f"{name[:-1]} %{{hovertext}} (position %{{customdata}})<extra></extra>",
            )
        )
    fig.update_xaxes(title_text=f"PC1 ({ratio[0]:.0%} of variance)")
    fig.update_yaxes(title_text=f"PC2 ({ratio[1]:.0%} of variance)")
    return style(fig, theme, title=title, height=620 if theme.presentation else 560, legend=True)
