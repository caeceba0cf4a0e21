"""Frames of the step-by-step animation of one head: the pipeline with the current step marked, and one query's
numbers against every key as bars (masked keys grey, marked −∞)."""

from __future__ import annotations

import html

import numpy as np
import plotly.graph_objects as go

from viz.figures.common import (
    CHAR_EM,
    Theme,
    boxed,
    export_size,
    reserve_top,
    style,
    thinned,
    tick_budget,
    token_labels,
)
from viz.figures.layout import add_annotations, figure, relayout, update_axes

MARK = "#e8590c"


def pipeline(steps: list[str], current: int, width_px: float = 10_000, font_px: float = 13) -> str:
    """The steps as HTML lines that fit ``width_px``: the current one bold and orange, those done in the normal
    colour, those to come muted (plotly titles understand <b> and <span style>)."""
    limit = max(12, int(width_px / (CHAR_EM * font_px)))
    lines: list[list[str]] = [[]]
    used = 0
    for i, name in enumerate(steps):
        text = html.escape(name)
        if i == current:
            text = f"<b><span style='color:{MARK}'>{text}</span></b>"
        elif i > current:
            text = f"<span style='color:#adb5bd'>{text}</span>"
        if lines[-1] and used + 3 + len(name) > limit:
            lines.append([])
            used = 0
        used += len(name) + 3
        lines[-1].append(text)
    return " →<br>".join(" → ".join(line) for line in lines)


def with_pipeline(fig: go.Figure, steps: list[str], current: int, theme: Theme) -> go.Figure:
    """Add the pipeline under the figure's subtitle (made by :func:`viz.figures.common.with_subtitle`)."""
    sub = fig.layout.title.subtitle.text or ""
    line = pipeline(steps, current, export_size(fig)[0] - 36, theme.sizes.axis_title)
    relayout(fig, title={"subtitle": {"text": f"{sub}<br>{line}" if sub else line}})
    reserve_top(fig, theme)
    return fig


def key_bars(
    keys: list[str],
    values,
    *,
    masked=None,
    highlight: int | None = None,
    y_title: str = "score",
    y_range: tuple[float, float] | None = None,
    title: str | None = None,
    theme: Theme | None = None,
    height: int = 560,
) -> go.Figure:
    """One bar per key (values (M,)); ``masked`` (M,) bool: drawn as grey stubs marked "−∞"; ``highlight``: the
    key in orange (the largest weight, say); ``y_range`` fixed so that consecutive frames share an axis."""
    theme = theme or Theme()
    v = np.asarray(values, dtype=np.float64)
    labels = token_labels(keys, theme.positions)
    if len(labels) != len(v):
        raise ValueError(f"{len(labels)} keys but {len(v)} values")
    masked = np.zeros(len(v), dtype=bool) if masked is None else np.asarray(masked, dtype=bool)
    shown = np.where(masked | ~np.isfinite(v), 0.0, v)
    colours = ["#ced4da" if m else (MARK if i == highlight else "#3b5bdb") for i, m in enumerate(masked)]
    text = ["−∞" if m else f"{x:.2f}" for m, x in zip(masked, shown)]
    fig = figure(
        go.Bar(
            x=labels,
            y=shown,
            marker_color=colours,
            text=text,
            textposition="outside",
            cliponaxis=False,
            textfont={"size": theme.sizes.tick},
            hovertemplate="key %{x}: %{text}<extra></extra>",
        )
    )
    width, height = boxed(theme, height, 1100)
    update_axes(
        fig, "x", type="category", title={"text": "key"}, **thinned(labels, tick_budget(width - 200, theme.sizes.tick))
    )
    axis = {"title": {"text": y_title}, "zeroline": True}
    if y_range is not None:
        lo, hi = y_range
        pad = 0.12 * (hi - lo or 1.0)
        axis["range"] = [min(lo, 0) - (pad if lo < 0 else 0), max(hi, 0) + pad]
    update_axes(fig, "y", **axis)
    if masked.any():
        add_annotations(
            fig,
            {
                "xref": "paper",
                "yref": "paper",
                "x": 1.0,
                "y": 1.02,
                "xanchor": "right",
                "yanchor": "bottom",
                "showarrow": False,
                "text": f"grey: {int(masked.sum())} masked key{'s' if masked.sum() != 1 else ''} (−∞)",
                "font": {"size": theme.sizes.base, "color": theme.colors["muted"]},
            },
        )
    return style(fig, theme, title=title, height=height)
