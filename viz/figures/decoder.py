"""Figures for decoders: a score per head (sinks, induction), generation step by step, grouped K/V heads."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from viz.figures.common import Theme, as_array, check_labels, style, thinned, tick_budget
from viz.figures.heatmaps import add_cell_targets
from viz.figures.layout import add_annotations, add_shapes, figure, update_axes
from viz.figures.text import token_labels


def head_scores(
    scores,
    *,
    title: str | None = None,
    value_name: str = "score",
    threshold: float | None = None,
    theme: Theme | None = None,
) -> go.Figure:
    """One number per head as a layers × heads grid (layer 0 on top); click a cell to report its (layer, head).

    scores: (L, H) in [0, 1]. ``threshold``: cells at or above it are marked with a dot (e.g. sink heads)."""
    s = as_array("scores", scores, 2).astype(np.float32)
    L, H = s.shape
    theme = theme or Theme()
    x, y = [f"H{h}" for h in range(H)], [f"L{i}" for i in range(L)]
    fig = figure(
        go.Heatmap(z=s, x=x, y=y, colorscale=theme.colorscale, zmin=0, zmax=1, colorbar={"title": {"text": value_name}})
    )
    if threshold is not None:
        rows, cols = np.nonzero(s >= threshold)
        fig.add_trace(
            go.Scatter(
                x=[x[c] for c in cols],
                y=[y[r] for r in rows],
                mode="markers",
                marker={"symbol": "circle", "size": 6 * theme.line_scale, "color": theme.colors["text"]},
                name=f"≥ {threshold:g}",
                hoverinfo="skip",
            )
        )
    if theme.interactive:  # on screen only: a click reports the cell's (layer, head)
        ids = np.stack(np.meshgrid(np.arange(L), np.arange(H), indexing="ij"), axis=-1)  # (L, H, 2)
        add_cell_targets(fig, x, y, s, ids, value_name, size=12, where="layer %{y}, head %{x}")
    else:
        for trace in fig.data:
            if trace.type == "heatmap":
                trace.hovertemplate = f"layer %{{y}}, head %{{x}}<br>{value_name}: %{{z:.3f}}<extra></extra>"
    height = max(360, min(900, (26 if theme.presentation else 20) * L + 200))
    update_axes(
        fig,
        "y",
        autorange="reversed",
        type="category",
        title={"text": "layer"},
        **thinned(y, tick_budget(height - 200, theme.sizes.tick)),
    )
    update_axes(fig, "x", type="category", title={"text": "head"}, side="bottom")
    return style(fig, theme, title=title, height=height, legend=threshold is not None)


def generation_map(
    rows,
    step_labels,
    position_labels,
    prompt_len: int,
    *,
    earlier: int = 0,
    title: str | None = None,
    theme: Theme | None = None,
) -> go.Figure:
    """Where each newly generated token's query looked, one row per step.

    rows: (S, M) attention weights; NaN where a position did not exist yet at that step. step_labels: S labels
    (the token produced, with the position it takes); position_labels: M labels of the positions (prompt, then
    generated tokens).
    prompt_len: columns before the line are the prompt. ``earlier`` > 0: the first column holds the summed
    weight of that many earlier positions that are not drawn one by one."""
    m = as_array("rows", rows, 2).astype(np.float32)
    S, M = m.shape
    theme = theme or Theme()
    y = token_labels(check_labels("step_labels", step_labels, S), "none")  # the caller numbers them
    x = token_labels(check_labels("position_labels", position_labels, M), theme.positions)
    hover = "produced %{y}<br>looked at %{x}: %{z:.3f}<extra></extra>"
    fig = figure(
        go.Heatmap(z=m, x=x, y=y, colorscale=theme.colorscale, zmin=0, zmax=1, hovertemplate=hover, name="weight")
    )
    line = {"color": theme.colors["text"], "width": 2 * theme.line_scale, "dash": "dash"}
    add_shapes(fig, dict(type="line", x0=prompt_len - 0.5, x1=prompt_len - 0.5, y0=-0.5, y1=S - 0.5, line=line))
    if earlier:
        add_annotations(
            fig,
            dict(
                x=0,
                y=-0.5,
                yshift=4,
                text=f"{earlier} earlier",
                showarrow=False,
                yanchor="bottom",
                font={"size": theme.sizes.tick, "color": theme.colors["text"]},
            ),
        )
    height = max(320, min(900, (26 if theme.presentation else 20) * S + 260))
    update_axes(
        fig, "y", autorange="reversed", type="category", title={"text": "generated token (step)"}, **thinned(y, 60)
    )
    update_axes(
        fig,
        "x",
        type="category",
        title={"text": "position attended to"},
        **thinned(x, tick_budget(1000, theme.sizes.tick)),
    )
    return style(fig, theme, title=title, height=height)


def group_distance_lines(within, across, *, title: str | None = None, theme: Theme | None = None) -> go.Figure:
    """Per layer, the mean Jensen–Shannon distance between heads that share a K/V head and between heads that
    do not. within, across: (L,)."""
    w = np.asarray(within, dtype=np.float32)
    a = np.asarray(across, dtype=np.float32)
    if w.shape != a.shape or w.ndim != 1:
        raise ValueError(f"within and across must be (L,) of one length, got {w.shape} and {a.shape}")
    theme = theme or Theme()
    layers = np.arange(len(w))
    fig = figure()
    for values, name, color in (
        (w, "heads sharing a K/V head", "#4263eb"),
        (a, "heads with different K/V heads", "#e8590c"),
    ):
        fig.add_trace(
            go.Scatter(
                x=layers,
                y=values,
                mode="lines+markers",
                name=name,
                line={"color": color, "width": 2 * theme.line_scale},
                hovertemplate="layer %{x}: %{y:.3f}<extra>" + name + "</extra>",
            )
        )
    update_axes(fig, "x", title={"text": "layer"}, dtick=max(1, len(w) // 15))
    update_axes(fig, "y", title={"text": "JS distance (lower: alike)"}, rangemode="tozero")
    return style(fig, theme, title=title, height=540 if theme.presentation else 420, legend=True)
