"""Heatmaps of one matrix: attention weights or scores, differences, any labelled matrix, head distances."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from viz.figures.cells import FOCUS_KEY, FOCUS_QUERY, add_cell_targets, outline_focus  # noqa: F401 (re-exported)
from viz.figures.common import (
    MAX_TICKS,
    Theme,
    as_array,
    block_of,
    boxed,
    check_labels,
    fit_to_screen,
    style,
    thinned,
    tick_budget,
    token_labels,
)
from viz.figures.layout import figure, update_axes
from viz.figures.sinks import add_sink_column, sink_rows
from viz.figures.text import slide_plot_px

# Up to this many tokens (heads, in a head-similarity matrix) every cell is clickable (a transparent marker each);
# beyond, the markers would number 5,000 and more: the token strip and the tables offer the same choices.
CLICK_MAX = 48
CLICK_MAX_HEADS = 36
HOVER_WEIGHT = "query: %{y}<br>key: %{x}<br>weight: %{z:.5f}<extra></extra>"
HOVER_SCORE = "query: %{y}<br>key: %{x}<br>score: %{z:.4f}<extra></extra>"
GREY = [[0, "#bdbdbd"], [1, "#bdbdbd"]]


def square_height(n: int, theme: Theme) -> int:
    """Height of a token × token heatmap: room for every row's label up to MAX_TICKS rows, then fixed (a
    slide: its box)."""
    per_row = 26 if theme.presentation else 18
    return boxed(theme, max(380, per_row * min(n, MAX_TICKS) + 200))[1]


def _masked_overlay(values: np.ndarray, x: list[str], y: list[str], hover: str) -> go.Heatmap | None:
    blocked = np.isneginf(values)
    if not blocked.any():
        return None
    return go.Heatmap(
        z=np.where(blocked, 1.0, np.nan),
        x=x,
        y=y,
        colorscale=GREY,
        showscale=False,
        zmin=0,
        zmax=1,
        hovertemplate=hover,
        name="masked",
    )


def _label_axes(
    fig: go.Figure, x: list[str], y: list[str], height: int, theme: Theme, x_title, y_title, focus=(-1, -1)
) -> None:
    """Categorical axes with at most as many tick labels as fit, the focus row and column always labelled;
    queries run down, keys along the bottom."""
    width = boxed(theme, height)[0]
    y_budget = tick_budget(height - 200, theme.sizes.tick)
    x_budget = tick_budget(min(width - 260, height - 120), theme.sizes.tick)  # labels stand upright when crowded
    if theme.box:  # a slide: what its plot area really keeps at 18 pt
        room_x, room_y = slide_plot_px(theme, x, y)
        y_budget, x_budget = tick_budget(room_y, theme.sizes.tick), tick_budget(room_x, theme.sizes.tick)
    update_axes(
        fig, "y", autorange="reversed", type="category", title={"text": y_title}, **thinned(y, y_budget, [focus[0]])
    )
    update_axes(fig, "x", type="category", title={"text": x_title}, **thinned(x, x_budget, [focus[1]]))


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
    focus: tuple[int, int] = (-1, -1),
    cell_ids=None,
    masked=None,
    axis_titles: tuple[str, str] = ("key token", "query token"),
    sink=None,
) -> go.Figure:
    """One head's attention as a heatmap: queries down the side, keys along the bottom.

    weights: (N, M) — softmax weights (``mode="weights"``) or scaled scores (``mode="scores"``,
    −inf cells drawn grey and labelled "masked"). tokens: N query labels; key_tokens: M labels
    (default: tokens). Beyond what the axes can show, tick labels are thinned; hover names every cell.
    ``focus``: (row, column) to outline, -1 for none. ``cell_ids``: (N, M) ids to report when a cell is
    clicked (each row and column's token position); up to CLICK_MAX tokens the cells become clickable.
    ``masked``: (N, M) bool, cells the mask blocks: drawn grey, not as the colour of a zero weight.
    ``axis_titles``: (x, y), e.g. ("source token (key)", "target token (query)") for cross-attention.
    ``sink``: (N,) the share of each row a learned sink takes (gpt-oss): its own column right of the map."""
    w = as_array("weights", weights, 2).astype(np.float32)
    if masked is not None and mode == "weights":  # a blocked cell is not a small weight: grey, as for scores
        w = np.where(np.asarray(masked, dtype=bool), -np.inf, w)
    n, m = w.shape
    theme = theme or Theme()
    y = token_labels(check_labels("tokens", tokens, n), theme.positions)
    x = token_labels(check_labels("key_tokens", tokens if key_tokens is None else key_tokens, m), theme.positions)
    if mode not in ("weights", "scores"):
        raise ValueError("mode must be 'weights' or 'scores'")
    if theme.window and theme.box and n == m and theme.window != (0, n):  # a slide of the tokens around the focus
        a, b = max(0, theme.window[0]), min(n, theme.window[1])
        w, y, x = w[a:b, a:b], y[a:b], x[a:b]
        sink = None if sink is None else sink_rows(sink, slice(a, b))
        focus = tuple(f - a if a <= f < b else -1 for f in focus)
        cell_ids = None if cell_ids is None else np.asarray(cell_ids)[a:b, a:b]
        title = f"{title} — tokens {a}–{b - 1} of {n}" if title else None
        n = m = b - a
    w, y, x, row_edges, col_edges = fit_to_screen(w, y, x, theme.max_cells)
    if row_edges is not None:  # block-averaged for the screen; exports are exact
        title = f"{title} (block means)" if title else None
        focus = (block_of(focus[0], row_edges), block_of(focus[1], col_edges))
        cell_ids = None
        n, m = w.shape
        sink = None if sink is None else sink_rows(sink, edges=row_edges)
    finite = np.where(np.isfinite(w), w, np.nan)
    if mode == "weights":
        zmin = 0.0 if zmin is None else zmin
        zmax = float(np.nanmax(finite)) if zmax is None and np.isfinite(finite).any() else (zmax or 1.0)
        zmax = max(zmax, float(np.max(sink))) if sink is not None and len(sink) else zmax  # one scale for both
        scale = colorscale or theme.colorscale
    else:
        bound = float(np.nanmax(np.abs(finite))) if np.isfinite(finite).any() else 1.0
        zmin = -bound if zmin is None else zmin
        zmax = bound if zmax is None else zmax
        scale = colorscale or theme.diverging
    fig = figure(
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
    if mode == "scores" or masked is not None:
        what = "masked (−∞ before softmax)" if mode == "scores" else "masked (weight exactly 0)"
        overlay = _masked_overlay(w, x, y, f"query: %{{y}}<br>key: %{{x}}<br>{what}<extra></extra>")
        if overlay is not None:
            fig.add_trace(overlay)
    height = height or square_height(max(n, m), theme)
    if cell_ids is not None and theme.interactive and max(n, m) <= CLICK_MAX:
        size = max(6, min(60, (height - 220) / max(n, m)))  # about one cell
        add_cell_targets(fig, x, y, finite, cell_ids, "weight" if mode == "weights" else "score", size)
    _label_axes(fig, x, y, height, theme, *axis_titles, focus)
    outline_focus(fig, focus, n, m, theme)
    if sink is not None and mode == "weights":  # after the axes: its own x axis keeps its own label
        add_sink_column(fig, sink_rows(sink), y, zmin, zmax, scale, theme)
    return style(fig, theme, title=title, height=height)


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
    for trace in fig.data:
        if trace.name == "scores":
            trace.hovertemplate = "query: %{y}<br>key: %{x}<br>A − B: %{z:+.5f}<extra></extra>"
            trace.colorbar.title.text = "A − B"  # keeps the bar where the margins were fitted for it
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

    m: (R, C); row_labels: R tokens; col_labels: C tokens (default: dimension indices d0, d1, …).
    """
    m = as_array("matrix", m, 2).astype(np.float32)
    r, c = r0, c0 = m.shape
    theme = theme or Theme()
    y = token_labels(check_labels("row_labels", row_labels, r), theme.positions)
    tokens_across = col_labels is not None
    x = token_labels(check_labels("col_labels", col_labels, c), theme.positions) if tokens_across else None
    m, y, x, _, _ = fit_to_screen(m, y, x, theme.max_cells)
    x = [f"d{j}" for j in range(m.shape[1])] if x is None else x
    r, c = m.shape
    finite = np.where(np.isfinite(m), m, np.nan)
    bound = zmax if zmax is not None else (float(np.nanmax(np.abs(finite))) if np.isfinite(finite).any() else 1.0)
    bound = bound or 1.0
    fig = figure(
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
    overlay = _masked_overlay(m, x, y, "row: %{y}<br>column: %{x}<br>−∞ (masked)<extra></extra>")
    if overlay is not None:
        fig.add_trace(overlay)
    per_row = 24 if theme.presentation else 16
    height = boxed(theme, height or max(300, min(760, per_row * r + 200)))[1]
    budget = tick_budget(height - 200, theme.sizes.tick)
    update_axes(fig, "y", autorange="reversed", type="category", **thinned(y, budget))
    update_axes(fig, "x", type="category", **thinned(x, budget))
    shape = f"shape ({r0}, {c0})" + (f", shown as {r} × {c} block means" if (r, c) != (r0, c0) else "")
    return style(fig, theme, title=f"{title} — {shape}" if title else shape, height=height)


def similarity_matrix(
    distance, labels, *, order=None, cell_ids=None, title: str | None = None, theme: Theme | None = None
) -> go.Figure:
    """Distances between heads (e.g. Jensen–Shannon). distance: (K, K); order: K indices to show them in
    (e.g. :func:`model.analysis.similarity.cluster_order`), default as given. ``cell_ids``: K ids (e.g.
    (layer, head)); up to CLICK_MAX heads a click on a cell reports the pair's ids."""
    d = as_array("distance", distance, 2)
    labels = [str(x) for x in labels]
    if d.shape != (len(labels), len(labels)):
        raise ValueError(f"distance {d.shape} does not match {len(labels)} labels")
    idx = np.arange(len(labels)) if order is None else np.asarray(order, dtype=int)
    if sorted(idx.tolist()) != list(range(len(labels))):
        raise ValueError("order must be a permutation of the heads")
    ordered = [labels[i] for i in idx]
    theme = theme or Theme()
    fig = figure(
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
    height = boxed(theme, max(440, min(1100, (22 if theme.presentation else 14) * len(labels) + 220)))[1]
    if cell_ids is not None and theme.interactive and len(labels) <= CLICK_MAX_HEADS:
        ids = [list(cell_ids[i]) for i in idx]
        pairs = np.array([[[*a, *b] for b in ids] for a in ids])  # (K, K, 2 * id length)
        size = max(6, min(40, (height - 220) / len(labels)))
        add_cell_targets(fig, ordered, ordered, d[np.ix_(idx, idx)], pairs, "JS distance", size, "%{y} vs %{x}")
    budget = tick_budget(height - 220, theme.sizes.tick)
    update_axes(fig, "y", autorange="reversed", type="category", **thinned(ordered, budget))
    update_axes(fig, "x", type="category", **thinned(ordered, budget))
    return style(fig, theme, title=title, height=height)
