"""Attention heatmaps: one head, all heads of a layer, differences."""

from __future__ import annotations

import itertools

import numpy as np
import plotly.graph_objects as go

from viz.figures.common import Theme, as_array, check_labels, downsample, style, unique_labels

GRID_MAX = 96  # small multiples are block-averaged beyond this many tokens: small cells carry no detail

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


def heads_grid(
    weights,
    tokens,
    *,
    head_labels=None,
    title: str | None = None,
    cols: int = 4,
    theme: Theme | None = None,
) -> go.Figure:
    """Small multiples: several heads tiled into one heatmap (one trace, one shared colour scale).

    weights: (H, N, N). Each head is a block with its label above it; hover names the query and key
    tokens. Beyond GRID_MAX tokens each block is block-averaged (hover then names token ranges).
    One trace instead of H subplots keeps the figure cheap to build and to send at 512 tokens.
    """
    w = as_array("weights", weights, 3).astype(np.float32)
    h, n, _ = w.shape
    labels = unique_labels(check_labels("tokens", tokens, n))
    what = "weight"
    if n > GRID_MAX:
        edges = np.linspace(0, n, GRID_MAX + 1).astype(int)
        labels = [f"tokens {a}–{b - 1}" for a, b in itertools.pairwise(edges)]
        w = downsample(w, GRID_MAX)
        what = "mean weight"
        title = f"{title} (block-averaged to {GRID_MAX}×{GRID_MAX})" if title else None
        n = GRID_MAX
    head_labels = [f"head {i}" for i in range(h)] if head_labels is None else [str(x) for x in head_labels]
    if len(head_labels) != h:
        raise ValueError(f"{len(head_labels)} head labels for {h} heads")
    theme = theme or Theme()
    cols = max(1, min(cols, h))
    rows = -(-h // cols)
    mosaic = np.full((rows, n + 1, cols, n + 1), np.nan, dtype=np.float32)
    for i in range(h):
        mosaic[i // cols, :n, i % cols, :n] = w[i]
    mosaic = mosaic.reshape(rows * (n + 1), cols * (n + 1))
    # Each block gets its own invisible suffix so plotly keeps the blocks' categories apart.
    x = [lab + "\u2060" * (c + 1) for c in range(cols) for lab in [*labels, "\u2063"]]
    y = [lab + "\u2060" * (r + 1) for r in range(rows) for lab in [*labels, "\u2063"]]
    zmax = float(np.nanmax(w)) if w.size else 1.0
    fig = go.Figure(
        go.Heatmap(
            z=mosaic,
            x=x,
            y=y,
            zmin=0,
            zmax=zmax,
            colorscale=theme.colorscale,
            hoverongaps=False,
            hovertemplate=f"query: %{{y}}<br>key: %{{x}}<br>{what}: %{{z:.5f}}<extra></extra>",
            colorbar={"title": {"text": what}},
            name="heads",
        )
    )
    fig.update_yaxes(autorange="reversed", type="category", showticklabels=False, showgrid=False)
    fig.update_xaxes(type="category", showticklabels=False, showgrid=False)
    fig.update_layout(
        annotations=[
            {
                "text": head_labels[i],
                "x": x[(i % cols) * (n + 1) + n // 2],
                "y": y[(i // cols) * (n + 1)],
                "xref": "x",
                "yref": "y",
                "yshift": 12,
                "showarrow": False,
            }
            for i in range(h)
        ]
    )
    style(fig, theme, title=title, height=min(1400, 230 * rows + 100))
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
