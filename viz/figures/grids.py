"""Several heatmaps in one figure: every head of a layer (tiled into one trace), weights beside contributions."""

from __future__ import annotations

import math

import numpy as np
import plotly.graph_objects as go

from viz.figures.common import (
    Theme,
    as_array,
    boxed,
    check_labels,
    downsample,
    fit_to_screen,
    set_export_width,
    style,
    thinned,
    tick_budget,
    token_labels,
    token_ranges,
    wrap,
)
from viz.figures.layout import figure, relayout, subplots, update_annotations, update_axes
from viz.figures.text import CHAR_EM, slide_plot_px

GRID_MAX = 64  # small multiples are block-averaged beyond this many tokens: small cells carry no detail
GUTTER = "\u2063"  # invisible separator category between blocks


def heads_grid(
    weights,
    tokens,
    *,
    head_labels=None,
    title: str | None = None,
    cols: int = 4,
    theme: Theme | None = None,
    block_labels: list[str] | None = None,
) -> go.Figure:
    """Small multiples: several heads tiled into one heatmap (one trace, one shared colour scale).

    weights: (H, N, N). Each head is a block with its label in a band of empty rows above it, as tall as
    the label's font, so labels never overlap a block. Hover names the query and key tokens. Beyond
    GRID_MAX tokens each block is block-averaged (hover then names token ranges). One trace instead of H
    subplots keeps the figure cheap to build and to send at 512 tokens. ``block_labels``: the weights are already
    block means over the token ranges these labels name (a long text's heads, model/long.py); tokens is ignored.
    """
    w = as_array("weights", weights, 3).astype(np.float32)
    h, n, _ = w.shape
    theme = theme or Theme()
    what = "weight"
    if block_labels is not None:
        labels, what = check_labels("block_labels", block_labels, n), "mean weight"
        title = f"{title} (block means)" if title else None
    else:
        labels = token_labels(check_labels("tokens", tokens, n), theme.positions)
    if n > GRID_MAX and block_labels is None:
        edges = np.linspace(0, n, GRID_MAX + 1).astype(int)
        labels = token_ranges(edges)
        w = downsample(w, GRID_MAX)
        what = "mean weight"
        title = f"{title} (block-averaged to {GRID_MAX}×{GRID_MAX})" if title else None
        n = GRID_MAX
    head_labels = [f"head {i}" for i in range(h)] if head_labels is None else [str(x) for x in head_labels]
    if len(head_labels) != h:
        raise ValueError(f"{len(head_labels)} head labels for {h} heads")
    cols = max(1, min(cols, h))
    rows = -(-h // cols)
    height = boxed(theme, min(1500, (300 if theme.presentation else 230) * rows + 120))[1]
    # Empty rows above each block hold its label: enough rows for 1.6 label heights at this block size (the
    # plot is the figure less the title, subtitle and margins: about 200 px, 290 on a slide).
    block_px = (height - (290 if theme.box else 200)) / rows
    label_px = 1.6 * theme.sizes.base
    gap = max(1, math.ceil(label_px * n / max(block_px - label_px, 1.0)))
    mosaic = np.full((rows, gap + n, cols, n + 1), np.nan, dtype=np.float32)
    for i in range(h):
        mosaic[i // cols, gap:, i % cols, :n] = w[i]
    mosaic = mosaic.reshape(rows * (gap + n), cols * (n + 1))
    # Each block gets its own invisible suffix so plotly keeps the blocks' categories apart.
    x = [lab + "\u2060" * (c + 1) for c in range(cols) for lab in [*labels, GUTTER]]
    y = [lab + "\u2060" * (r + 1) for r in range(rows) for lab in [*[GUTTER * (g + 2) for g in range(gap)], *labels]]
    zmax = float(np.nanmax(w)) if w.size else 1.0
    fig = figure(
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
    hidden = {"type": "category", "showticklabels": False, "showgrid": False, "ticks": ""}
    relayout(
        fig,
        xaxis=hidden,
        yaxis={**hidden, "autorange": "reversed"},
        annotations=[
            {
                "text": head_labels[i],
                "x": x[(i % cols) * (n + 1) + n // 2],
                "y": y[(i // cols) * (gap + n) + gap - 1],  # the last empty row: the label sits on the block
                "xref": "x",
                "yref": "y",
                "yanchor": "bottom",
                "showarrow": False,
                "font": {"size": theme.sizes.base},
            }
            for i in range(h)
        ],
    )
    return style(fig, theme, title=title, height=height)


def weights_vs_contributions(pattern, contrib, tokens, *, title: str | None = None, theme: Theme | None = None):
    """Side by side: attention weights α and norm-based contributions α·‖v W_o‖ (each row normalised)."""
    p = as_array("pattern", pattern, 2)
    c = as_array("contrib", contrib, 2)
    theme = theme or Theme()
    labels = token_labels(check_labels("tokens", tokens, p.shape[0]), theme.positions)
    c_norm = c / np.maximum(c.sum(-1, keepdims=True), 1e-12)
    p, screen_labels, _, edges, _ = fit_to_screen(p, labels, labels, theme.max_cells)
    c_norm = fit_to_screen(c_norm, labels, labels, theme.max_cells)[0]
    labels = screen_labels
    title = f"{title} (block means)" if title and edges is not None else title
    fig = subplots(
        rows=1,
        cols=2,
        subplot_titles=("weight α", "contribution α·‖v·W_o‖ (row share)"),
        horizontal_spacing=0.12,
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
    height = max(420, min(900, (24 if theme.presentation else 16) * len(labels) + 240))
    relayout(fig, coloraxis={"colorscale": theme.colorscale, "cmin": 0, "cmax": zmax})
    axes = thinned(labels, tick_budget(height - 240, theme.sizes.tick))
    update_axes(fig, "y", autorange="reversed", type="category", **axes)
    update_axes(fig, "x", type="category", **axes)
    style(fig, theme, title=title, height=height, above=1)
    update_annotations(fig, {"font": {"size": theme.sizes.axis_title, "color": theme.colors["text"]}, "yshift": 8})
    return fig


SCREEN_WIDTH = 1200  # px a figure may get on screen (the page's column); gaps between panels are sized for it


def _gap(panels, theme: Theme, width: int) -> float:
    """Horizontal spacing between panels with their own row labels: wide enough for the longest label of the
    panels right of the first (a label like "tokens 12–15" must not reach into the previous heatmap), as a
    fraction of the plotting width, sized for the narrower of the export and a screen column."""
    longest = max((len(str(label)) for _, rows, _, _ in panels for label in rows), default=0)
    label_px = 0.62 * theme.sizes.tick * (longest + 3) + 12  # "·12" positions are added to repeated tokens
    return float(min(0.15, max(0.1, label_px / (min(width, SCREEN_WIDTH) - 160))))


def _label_px(labels, theme: Theme) -> float:
    """Room under a panel for its column labels, drawn upright when crowded (capped: plotly cuts long ones)."""
    longest = max((len(str(label)) for group in labels for label in group), default=4)
    return min(260.0, 0.62 * theme.sizes.tick * (longest + 3) + 16)


def heatmap_panels(
    panels,
    *,
    title: str | None = None,
    theme: Theme | None = None,
    diverging: bool = False,
    zmax: float | None = None,
    value_name: str = "weight",
    shared_rows: bool = False,
    height: int | None = None,
    keep: tuple = ((), ()),
    columns: int | None = None,
    on_slide: tuple[int, ...] | None = None,
) -> go.Figure:
    """Matrices side by side on one colour scale, each with its own title: one figure to compare them
    (``columns``: at most this many side by side, the rest in further rows of the grid).

    panels: [(matrix (R, C), row labels (R), column labels (C) or None for d0, d1, …, panel title)].
    −inf cells are grey ("masked"). ``shared_rows``: the panels have the same rows (labels only on the left).
    On a slide (``theme.box``) only the panels ``on_slide`` (indices) are drawn — one idea per slide, each
    panel wide enough for its labels at 18 pt — and panels with the same rows label them once, on the left.
    ``diverging``: a scale symmetric around 0 (scores, Q/K/V), else 0 to the largest value (weights).
    ``keep``: (rows, columns) always labelled when the ticks are thinned (the tokens in focus).
    """
    theme = theme or Theme()
    if theme.box and on_slide is not None:
        panels = [panels[i] for i in on_slide]
    if theme.box and len(panels) > 1 and all(list(p[1]) == list(panels[0][1]) for p in panels):
        shared_rows = True
    k = len(panels)
    fitted = []
    for matrix, rows, cols, panel_title in panels:  # long texts: block means on screen, exact in exports
        m = as_array("matrix", matrix, 2).astype(np.float32)
        m, rows, cols, edges, _ = fit_to_screen(m, check_labels("row labels", rows, m.shape[0]), cols, theme.max_cells)
        fitted.append((m, rows, cols, panel_title + (" (block means)" if edges is not None else "")))
    panels = fitted
    mats = [p[0] for p in panels]
    finite = [np.where(np.isfinite(m), m, np.nan) for m in mats]
    values = np.concatenate([f[np.isfinite(f)] for f in finite]) if any(np.isfinite(f).any() for f in finite) else [1]
    bound = zmax if zmax is not None else float(np.nanmax(np.abs(values)) if diverging else np.nanmax(values))
    bound = bound or 1.0
    rows = max(m.shape[0] for m in mats)
    ncols = min(columns or k, k)
    nrows = -(-k // ncols)
    asked = height
    width, height = boxed(
        theme,
        height or max(380, (26 if theme.presentation else 18) * min(rows, 60) + 240),
        max(800, 360 * ncols + 160),
    )
    width = min(1800, width)
    # Panel titles are wrapped to their panel's width (they sit above it and must not reach the next one).
    panel_titles = [wrap(p[3], 0.8 * (width - 160) / ncols, theme.sizes.axis_title) for p in panels]
    right = [p for i, p in enumerate(panels) if i % ncols]  # panels whose row labels sit beside another panel
    spacing = 0.04 if shared_rows else _gap(right, theme, width) if right else 0.1
    panel_w = (min(width, SCREEN_WIDTH) - 160) * (1 - spacing * (ncols - 1)) / ncols
    shape = max(m.shape[0] / max(m.shape[1], 1) for m in mats)
    below = _label_px([p[2] or [] for p in panels], theme) + theme.sizes.axis_title * 4  # x labels + next title
    if asked is None and not theme.box and nrows > 1:  # a grid of roughly square panels
        height = int(nrows * (min(700, max(260, panel_w * shape)) + below) + 200)
    fig = subplots(
        rows=nrows,
        cols=ncols,
        subplot_titles=panel_titles,
        shared_yaxes=shared_rows,
        horizontal_spacing=spacing,
        vertical_spacing=min(0.3, below / max(height - 200, 1)) if nrows > 1 else 0.1,
    )
    panel_h = (height - 240) / nrows if nrows == 1 else (height - 200) / nrows - below
    panel_w = (width - 160) * (1 - spacing * (ncols - 1)) / ncols
    if theme.box:  # a slide: what its plot area really keeps at 18 pt (row labels once when they are shared)
        lines = max(t.count("<br>") + 1 for t in panel_titles)
        x_all = [c for p in panels for c in (p[2] or ["d000"])]
        room_x, room_y = slide_plot_px(theme, x_all, [r for p in panels for r in p[1]], above=lines * nrows)
        label_w = 0 if shared_rows else CHAR_EM * theme.sizes.tick * max(len(str(r)) for p in panels for r in p[1])
        panel_w = (room_x - label_w * (ncols - 1)) * (1 - spacing * (ncols - 1)) / ncols
        panel_h = room_y / nrows - (below if nrows > 1 else 0)
    budget = tick_budget(panel_h, theme.sizes.tick)
    x_budget = tick_budget(panel_w, theme.sizes.tick)  # one panel
    for i, ((_, row_labels, col_labels, _), m, f) in enumerate(zip(panels, mats, finite)):
        at = {"row": i // ncols + 1, "col": i % ncols + 1}
        y = token_labels(row_labels, theme.positions)
        x = [f"d{j}" for j in range(m.shape[1])] if col_labels is None else token_labels(col_labels, theme.positions)
        hover = f"row: %{{y}}<br>column: %{{x}}<br>{value_name}: %{{z:.4f}}<extra></extra>"
        fig.add_trace(go.Heatmap(z=f, x=x, y=y, coloraxis="coloraxis", hovertemplate=hover, name=value_name), **at)
        if np.isneginf(m).any():
            fig.add_trace(
                go.Heatmap(
                    z=np.where(np.isneginf(m), np.float32(1.0), np.float32(np.nan)),  # float32: half the bytes
                    x=x,
                    y=y,
                    colorscale=[[0, "#bdbdbd"], [1, "#bdbdbd"]],
                    showscale=False,
                    hovertemplate="row: %{y}<br>column: %{x}<br>−∞ (masked)<extra></extra>",
                    name="masked",
                ),
                **at,
            )
        update_axes(fig, "y", autorange="reversed", type="category", **thinned(y, budget, keep[0]), **at)
        update_axes(fig, "x", type="category", **thinned(x, x_budget, keep[1]), **at)
    scale = theme.diverging if diverging else theme.colorscale
    relayout(
        fig,
        coloraxis={
            "colorscale": scale,
            "cmin": -bound if diverging else 0,
            "cmax": bound,
            "colorbar": {"title": {"text": value_name}},
        },
    )
    set_export_width(fig, width)
    above = max(t.count("<br>") + 1 for t in panel_titles) + (1 if nrows > 1 else 0)
    style(fig, theme, title=title, height=height, above=above)
    if theme.box:  # labels crowded in a slide's panels stand upright
        update_axes(fig, "x", tickangle=-90)
    update_annotations(fig, {"font": {"size": theme.sizes.axis_title, "color": theme.colors["text"]}, "yshift": 6})
    return fig
