"""Figures for the inside-attention pages: matrices with shapes, one query explained, Q/K space,
value norms, positional encodings, the √d_k demo and prediction bars."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from viz.figures.common import Theme, as_array, check_labels, style, unique_labels


def matrix_heatmap(
    m,
    row_labels,
    *,
    col_labels=None,
    title: str | None = None,
    zmax: float | None = None,
    diverging: bool = True,
    theme: Theme | None = None,
    height: int | None = None,
    value_name: str = "value",
) -> go.Figure:
    """Any matrix (rows = tokens) with its shape in the title; −inf cells grey and labelled "−∞".

    m: (R, C); row_labels: R; col_labels: C (default: dimension indices).
    """
    m = as_array("matrix", m, 2).astype(np.float32)
    r, c = m.shape
    y = unique_labels(check_labels("row_labels", row_labels, r))
    x = [f"d{j}" for j in range(c)] if col_labels is None else unique_labels(check_labels("col_labels", col_labels, c))
    theme = theme or Theme()
    finite = np.where(np.isfinite(m), m, np.nan)
    bound = zmax if zmax is not None else (float(np.nanmax(np.abs(finite))) if np.isfinite(finite).any() else 1.0)
    bound = bound or 1.0
    fig = go.Figure(
        go.Heatmap(
            z=finite,
            x=x,
            y=y,
            colorscale=theme.diverging if diverging else theme.colorscale,
            zmin=-bound if diverging else 0,
            zmax=bound,
            name=value_name,
            hovertemplate=f"row: %{{y}}<br>column: %{{x}}<br>{value_name}: %{{z:.4f}}<extra></extra>",
        )
    )
    blocked = np.isneginf(m)
    if blocked.any():
        fig.add_trace(
            go.Heatmap(
                z=np.where(blocked, 1.0, np.nan),
                x=x,
                y=y,
                colorscale=[[0, "#bdbdbd"], [1, "#bdbdbd"]],
                showscale=False,
                hovertemplate="row: %{y}<br>column: %{x}<br>−∞ (masked)<extra></extra>",
                name="masked",
            )
        )
    full = f"{title} — shape ({r}, {c})" if title else f"shape ({r}, {c})"
    fig.update_yaxes(autorange="reversed", type="category")
    fig.update_xaxes(type="category", tickangle=-60, showticklabels=c <= 64)
    style(fig, theme, title=full, height=height or max(260, min(700, 16 * r + 140)))
    return fig


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


def weights_vs_contributions(pattern, contrib, tokens, *, title: str | None = None, theme: Theme | None = None):
    """Side by side: attention weights α and norm-based contributions α·‖v W_o‖ (each row normalised)."""
    p = as_array("pattern", pattern, 2)
    c = as_array("contrib", contrib, 2)
    labels = unique_labels(check_labels("tokens", tokens, p.shape[0]))
    theme = theme or Theme()
    c_norm = c / np.maximum(c.sum(-1, keepdims=True), 1e-12)
    fig = make_subplots(
        rows=1,
        cols=2,
        subplot_titles=("attention weight α", "contribution α·‖v·W_o‖ (row share)"),
        horizontal_spacing=0.08,
    )
    zmax = float(max(p.max(initial=0), c_norm.max(initial=0))) or 1.0
    for col, z, name in ((1, p, "weight"), (2, c_norm, "contribution share")):
        fig.add_trace(
            go.Heatmap(
                z=z,
                x=labels,
                y=labels,
                coloraxis="coloraxis",
                hovertemplate=f"query: %{{y}}<br>key: %{{x}}<br>{name}: %{{z:.4f}}<extra></extra>",
            ),
            1,
            col,
        )
    fig.update_layout(coloraxis={"colorscale": theme.colorscale, "cmin": 0, "cmax": zmax})
    fig.update_yaxes(autorange="reversed", type="category")
    fig.update_xaxes(type="category", tickangle=-60)
    style(fig, theme, title=title, height=max(380, min(800, 16 * len(labels) + 200)))
    return fig


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
    style(fig, theme, title=f"{title} — shape {t.shape}" if title else None, height=460)
    return fig


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
    style(fig, theme, title=title, height=380)
    return fig


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
    style(fig, theme, title=title, height=460)
    return fig


def scaling_figure(demo: dict, *, real: dict | None = None, theme: Theme | None = None) -> go.Figure:
    """Entropy, max weight and softmax-gradient norm against d_k, with and without 1/√d_k."""
    theme = theme or Theme()
    fig = make_subplots(
        rows=1, cols=3, subplot_titles=("mean entropy (nats)", "mean largest weight", "softmax gradient norm")
    )
    for col, metric in enumerate(("entropy", "max_weight", "gradient"), start=1):
        for variant, colour, dash in (("scaled", "#4263eb", "solid"), ("unscaled", "#e8590c", "dash")):
            fig.add_trace(
                go.Scatter(
                    x=demo["d_k"],
                    y=demo[f"{metric}_{variant}"],
                    mode="lines+markers",
                    name=f"{variant}",
                    line={"color": colour, "dash": dash, "width": 2 * theme.line_scale},
                    showlegend=col == 1,
                    hovertemplate=f"d_k %{{x}}<br>{variant}: %{{y:.4f}}<extra></extra>",
                ),
                1,
                col,
            )
        fig.update_xaxes(type="log", title_text="d_k", row=1, col=col)
    style(fig, theme, title="Random q, k: why attention divides by √d_k", height=400)
    return fig


def prediction_bars(tokens, probs, *, title: str | None = None, theme: Theme | None = None) -> go.Figure:
    """Top-k predictions as horizontal bars (best on top)."""
    labels = unique_labels(tokens)
    theme = theme or Theme()
    fig = go.Figure(
        go.Bar(
            x=list(probs),
            y=labels,
            orientation="h",
            marker_color="#4263eb",
            hovertemplate="%{y}: %{x:.2%}<extra></extra>",
        )
    )
    fig.update_yaxes(autorange="reversed", type="category")
    fig.update_xaxes(title_text="probability", tickformat=".0%")
    style(fig, theme, title=title, height=80 + 32 * len(labels))
    return fig


def change_bars(
    tokens, values, *, title: str | None = None, theme: Theme | None = None, x_title: str = "relative change"
) -> go.Figure:
    """One bar per token (e.g. how much ablation changed its output)."""
    labels = unique_labels(tokens)
    theme = theme or Theme()
    fig = go.Figure(
        go.Bar(x=labels, y=list(values), marker_color="#e8590c", hovertemplate="%{x}: %{y:.4f}<extra></extra>")
    )
    fig.update_xaxes(type="category", tickangle=-60)
    fig.update_yaxes(title_text=x_title)
    style(fig, theme, title=title, height=380)
    return fig
