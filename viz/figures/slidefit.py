"""A slide's axes refitted to what its box really keeps at 18 pt: tick labels thinned (category and explicit
ticks) or capped (``nticks`` for automatic ones) so that no two labels of an axis overprint. Screens keep their
own layout; figure builders that already budget a slide's ticks (token maps) are left as they are."""

from __future__ import annotations

import re

import plotly.graph_objects as go

from viz.figures.layout import held, relayout
from viz.figures.text import CHAR_EM, slide_plot_px, thinned


def _ticks(axis: dict, key: str = "tickvals") -> list | None:
    values = axis.get(key)
    return None if values is None else list(values)


def fit_slide_axes(fig: go.Figure, theme) -> go.Figure:
    """Thin or cap every axis's tick labels to the length the slide gives it (its domain's share of the plot
    area :func:`slide_plot_px` estimates): at most one label per 1.3 font sizes across, or per label's width
    along a flat axis of numbers."""
    layout = held(fig)
    names = [k for k in layout if re.fullmatch(r"[xy]axis\d*", k)]
    xs = [v for k in names if k[0] == "x" for v in (_ticks(layout[k], "ticktext") or _ticks(layout[k]) or [])]
    ys = [v for k in names if k[0] == "y" for v in (_ticks(layout[k], "ticktext") or _ticks(layout[k]) or [])]
    title = fig.layout.title.text or ""
    sizes = theme.sizes
    taken = 1.25 * sizes.title * title.count("<br>") + (3 * sizes.base if fig.layout.showlegend else 0)
    room = dict(zip("xy", slide_plot_px(theme, xs, ys, band=int(taken))))  # less a wrapped title and a legend
    tick = theme.sizes.tick
    changes = {}
    for name in names or ["xaxis", "yaxis"]:
        axis = layout.get(name, {})
        letter = name[0]
        lo, hi = axis.get("domain", [0, 1])
        length = room[letter] * (hi - lo)
        ticks = _ticks(axis)
        upright = letter == "y" or axis.get("tickangle") in (-90, 90)
        if ticks is not None and len(ticks) > 1:
            texts = [str(t) for t in (_ticks(axis, "ticktext") or ticks)]
            widest = max(len(t) for t in texts)
            pitch = 1.3 * tick if upright or axis.get("type") == "category" else CHAR_EM * tick * widest + tick
            budget = max(2, int(length // pitch))
            flat_words = letter == "x" and not upright and axis.get("type") == "category"
            if flat_words and len(ticks) * (CHAR_EM * tick * widest + tick) > length:
                changes[name] = {"tickangle": -90}  # words side by side would run into each other
            if len(ticks) > budget:
                keep = thinned(list(range(len(ticks))), budget)["tickvals"]
                changes[name] = {
                    **changes.get(name, {}),
                    "tickvals": [ticks[i] for i in keep],
                    "ticktext": [texts[i] for i in keep],
                }
        elif ticks is None and not axis.get("dtick"):  # automatic ticks: plotly picks at most nticks
            changes[name] = {"nticks": max(2, int(length // ((1.6 if upright else 4.0) * tick)))}
    return relayout(fig, changes) if changes else fig
