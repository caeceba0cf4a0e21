"""Heatmaps of one matrix: attention weights or scores, differences, any labelled matrix, head distances."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from viz.figures.common import Theme, as_array, check_labels, style, unique_labels

HOVER_WEIGHT = "query: %{y}<br>key: %{x}<br>weight: %{z:.5f}<extra></extra>"
HOVER_SCORE = "query: %{y}<br>key: %{x}<br>score: %{z:.4f}<extra></extra>"


def _masked_overlay(scores: np.ndarray, x: list[str], y: list[str]) -> go.Heatmap | None:
    blocked = ~np.isfinite(scores)
    if not blocked.any():
        return None
    z = np.where(blocked, 1.0, np.nan)
    return go.Heatmap(
        z=z,
        x=x,
        y=y,
        colorscale=[[0, "#bdbdbd"], [1, "#bdbdbd"]],
        showscale=False,
        zmin=0,
        zmax=1,
        hovertemplate="query: %{y}<br>key: %{x}<br>masked (−∞ before softmax)<extra></extra>",
        name="masked",
    )


def attention_heatmap(
    weights,
    tokens,
    *,
    key_tokens=None,
    title: str | None = None,
    mode: str = "weights",
    zmin: float | None = None,
    zmax: float | None = None,
    colorscale: str | None = None,
    theme: Theme | None = None,
    height: int | None = None,
) -> go.Figure:
    """One head's attention as a heatmap: queries down the side, keys along the top.

    weights: (N, M) — softmax weights (``mode="weights"``) or scaled scores (``mode="scores"``,
    −inf cells drawn grey and labelled "masked"). tokens: N query labels; key_tokens: M labels
    (default: tokens).
    """
    w = as_array("weights", weights, 2).astype(np.float32)
    n, m = w.shape
    y = unique_labels(check_labels("tokens", tokens, n))
    x = unique_labels(check_labels("key_tokens", tokens if key_tokens is None else key_tokens, m))
    theme = theme or Theme()
    if mode not in ("weights", "scores"):
        raise ValueError("mode must be 'weights' or 'scores'")
    finite = np.where(np.isfinite(w), w, np.nan)
    if mode == "weights":
        zmin = 0.0 if zmin is None else zmin
        zmax = float(np.nanmax(finite)) if zmax is None and np.isfinite(finite).any() else (zmax or 1.0)
        scale = colorscale or theme.colorscale
    else:
        bound = float(np.nanmax(np.abs(finite))) if np.isfinite(finite).any() else 1.0
        zmin = -bound if zmin is None else zmin
        zmax = bound if zmax is None else zmax
        scale = colorscale or theme.diverging
    fig = go.Figure(
        go.Heatmap(
            z=finite,
            x=x,
            y=y,
            zmin=zmin,
            zmax=zmax,
            colorscale=scale,
            hovertemplate=HOVER_WEIGHT if mode == "weights" else HOVER_SCORE,
            colorbar={"title": {"text": "weight" if mode == "weights" else "score"}},
            name=mode,
        )
    )
    overlay = _masked_overlay(w, x, y) if mode == "scores" else None
    if overlay is not None:
        fig.add_trace(overlay)
    fig.update_yaxes(autorange="reversed", title_text="query token", type="category")
    fig.update_xaxes(title_text="key token", type="category", tickangle=-60, side="bottom")
    side = max(350, min(900, 18 * max(n, m) + 150))
    style(fig, theme, title=title, height=height or side)
    if max(n, m) > 60:  # dense axes: let plotly thin the labels instead of overprinting them
        fig.update_xaxes(nticks=40)
        fig.update_yaxes(nticks=40)
    return fig


def difference_heatmap(
    a, b, tokens, *, key_tokens=None, title: str | None = None, theme: Theme | None = None
) -> go.Figure:
    """A − B on a symmetric diverging scale. a, b: (N, M) of the same shape."""
    a = as_array("a", a, 2).astype(np.float32)
    b = as_array("b", b, 2).astype(np.float32)
    if a.shape != b.shape:
        raise ValueError(f"cannot subtract maps of shapes {a.shape} and {b.shape}")
    diff = a - b
    bound = float(np.nanmax(np.abs(diff))) if diff.size else 1.0
    theme = theme or Theme()
    fig = attention_heatmap(
        diff,
        tokens,
        key_tokens=key_tokens,
        title=title,
        mode="scores",
        zmin=-bound or -1,
        zmax=bound or 1,
        colorscale=theme.diverging,
        theme=theme,
    )
    fig.update_traces(
        hovertemplate="query: %{y}<br>key: %{x}<br>A − B: %{z:+.5f}<extra></extra>",
        colorbar={"title": {"text": "A − B"}},
        selector={"name": "scores"},
    )
    return fig


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


def similarity_matrix(
    distance, labels, *, order=None, title: str | None = None, theme: Theme | None = None
) -> go.Figure:
    """Distances between heads (e.g. Jensen–Shannon). distance: (K, K); order: K indices to show them in
    (e.g. :func:`model.analysis.similarity.cluster_order`), default as given."""
    d = as_array("distance", distance, 2)
    labels = [str(x) for x in labels]
    if d.shape != (len(labels), len(labels)):
        raise ValueError(f"distance {d.shape} does not match {len(labels)} labels")
    idx = np.arange(len(labels)) if order is None else np.asarray(order, dtype=int)
    if sorted(idx.tolist()) != list(range(len(labels))):
        raise ValueError("order must be a permutation of the heads")
    ordered = [labels[i] for i in idx]
    theme = theme or Theme()
    fig = go.Figure(
        go.Heatmap(
            z=d[np.ix_(idx, idx)],
            x=ordered,
            y=ordered,
            colorscale=theme.colorscale + "_r",
            zmin=0,
            hovertemplate="%{y} vs %{x}<br>JS distance: %{z:.3f}<extra></extra>",
            colorbar={"title": {"text": "JS distance"}},
        )
    )
    fig.update_yaxes(autorange="reversed", type="category")
    fig.update_xaxes(type="category", tickangle=-60)
    style(fig, theme, title=title, height=max(420, 14 * len(labels) + 160))
    return fig
