"""Several heatmaps in one figure: every head of a layer (tiled into one trace), weights beside contributions."""

from __future__ import annotations

import itertools

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from viz.figures.common import Theme, as_array, check_labels, downsample, style, unique_labels

GRID_MAX = 96  # small multiples are block-averaged beyond this many tokens: small cells carry no detail


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
