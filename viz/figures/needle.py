"""The long-context lesson: a depth × length map of needle-in-a-haystack runs, and numbers that follow the length."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from viz.figures.common import Theme, as_array, style
from viz.figures.layout import figure, update_axes


def needle_map(
    values,
    depths: list[str],
    lengths: list[str],
    found,
    *,
    title: str | None = None,
    value_name: str = "share",
    hover: list[list[str]] | None = None,
    theme: Theme | None = None,
) -> go.Figure:
    """Depth (rows, the needle near the start on top) × haystack length (columns), as the "needle in a haystack"
    plots draw it. values: (D, Lg) in [0, 1]; found: (D, Lg) bool, written in each cell (✓ the reply repeats the
    answer, ✗ it does not); hover: (D, Lg) extra lines per cell."""
    v = as_array("values", values, 2).astype(np.float64)
    marks = np.asarray(found, dtype=bool)
    if marks.shape != v.shape or v.shape != (len(depths), len(lengths)):
        raise ValueError(f"values {v.shape}, found {marks.shape}, {len(depths)} depths × {len(lengths)} lengths")
    theme = theme or Theme()
    text = np.where(marks, "✓", "✗")
    extra = np.array(hover, dtype=object) if hover is not None else np.full(v.shape, "", dtype=object)
    fig = figure(
        go.Heatmap(
            z=v,
            x=lengths,
            y=depths,
            zmin=0,
            zmax=1,
            colorscale=theme.colorscale,
            text=text,
            texttemplate="%{text}",
            textfont={"size": theme.sizes.axis_title},
            customdata=extra,
            hovertemplate=f"length %{{x}}, needle at %{{y}}<br>{value_name}: %{{z:.2f}}<br>%{{customdata}}"
            "<extra></extra>",
            colorbar={"title": {"text": value_name}},
            xgap=2,
            ygap=2,
        )
    )
    update_axes(fig, "x", type="category", title={"text": "haystack length (tokens)"})
    update_axes(fig, "y", type="category", autorange="reversed", title={"text": "needle depth"})
    height = max(360, min(720, 70 * len(depths) + 220))
    return style(fig, theme, title=title, height=height)


def length_lines(
    lengths: list[int],
    series: dict[str, list[float]],
    *,
    title: str | None = None,
    y_title: str = "value",
    theme: Theme | None = None,
) -> go.Figure:
    """One line per named series over the haystack length (a log axis: lengths double)."""
    theme = theme or Theme()
    fig = figure()
    for name, ys in series.items():
        fig.add_trace(
            go.Scatter(
                x=list(lengths),
                y=list(ys),
                mode="lines+markers",
                name=name,
                line={"width": 2 * theme.line_scale},
                hovertemplate=f"{name}<br>%{{x}} tokens: %{{y:.2f}}<extra></extra>",
            )
        )
    update_axes(fig, "x", type="log", title={"text": "haystack length (tokens)"}, tickvals=list(lengths),
                ticktext=[f"{n:,}" for n in lengths])  # fmt: skip
    update_axes(fig, "y", title={"text": y_title}, rangemode="tozero")
    return style(fig, theme, title=title, height=480, legend=True)
