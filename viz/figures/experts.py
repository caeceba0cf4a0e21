"""A mixture-of-experts layer's routing: the text with each token coloured by its first-choice expert (as Figure 8
of the Mixtral paper does), the token × expert matrix of router weights, and how evenly the experts are used."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from viz.figures.common import Theme, check_labels, style
from viz.figures.headview import HEAD_COLOURS
from viz.figures.layout import figure, relayout, update_axes
from viz.figures.palette import text_on

OTHER = "#d0d0d0"  # experts beyond the coloured ones: grey, named on hover


def expert_colours(first: np.ndarray, n_experts: int) -> dict[int, str]:
    """A colour for each of the most often first-chosen experts (as many as the palette holds), most used first."""
    counts = np.bincount(np.asarray(first, dtype=int), minlength=n_experts)
    order = [int(e) for e in np.argsort(-counts, kind="stable") if counts[e] > 0]
    return {e: HEAD_COLOURS[i] for i, e in enumerate(order[: len(HEAD_COLOURS)])}


def routed_text(
    tokens, first, weight, n_experts: int, *, title: str | None = None, theme: Theme | None = None, per_line: int = 48
) -> go.Figure:
    """The text as a row of chips, each token's chip the colour of its first-choice expert. tokens: N labels;
    first: (N,) expert ids; weight: (N,) the router's weight on that expert; ``per_line``: characters a line
    holds before the text wraps."""
    theme = theme or Theme()
    first = np.asarray(first, dtype=int)
    labels = check_labels("tokens", tokens, len(first))
    colours = expert_colours(first, n_experts)
    lines, x, row = [], 0.0, 0
    for label in labels:
        w = max(2.0, len(label.strip()) + 1.0)
        if x and x + w > per_line:
            x, row = 0.0, row + 1
        lines.append((x, row, w))
        x += w + 0.4
    fig = figure()
    shapes = []
    for (x0, r, w), e in zip(lines, first, strict=True):
        shapes.append(
            dict(type="rect", x0=x0, x1=x0 + w, y0=-r - 0.42, y1=-r + 0.42, line={"width": 0},
                 fillcolor=colours.get(int(e), OTHER), layer="below")
        )  # fmt: skip
    centres = [x0 + w / 2 for x0, _, w in lines]
    fig.add_trace(
        go.Scatter(
            x=centres,
            y=[-r for _, r, _ in lines],
            mode="text",
            text=[lab.strip() or "␣" for lab in labels],
            textfont={"size": theme.sizes.tick + 2, "color": [text_on(colours.get(int(e), OTHER)) for e in first]},
            customdata=np.column_stack([first, np.round(np.asarray(weight, dtype=float), 4)]).tolist(),
            hovertemplate="%{text}<br>first choice: expert %{customdata[0]}, weight %{customdata[1]:.3f}"
            "<extra></extra>",
            showlegend=False,
        )
    )
    for e, colour in colours.items():  # the legend: one entry per coloured expert
        fig.add_trace(
            go.Scatter(x=[None], y=[None], mode="markers", name=f"expert {e}",
                       marker={"symbol": "square", "size": 14, "color": colour})
        )  # fmt: skip
    if len(colours) < len(set(first.tolist())):
        fig.add_trace(
            go.Scatter(x=[None], y=[None], mode="markers", name="other experts",
                       marker={"symbol": "square", "size": 14, "color": OTHER})
        )  # fmt: skip
    relayout(fig, shapes=shapes)
    update_axes(fig, "x", visible=False, range=[-0.5, per_line + 0.5])
    update_axes(fig, "y", visible=False, range=[-row - 0.7, 0.7])
    line = 3.2 * (theme.sizes.tick + 2)  # a line of chips and the gap to the next, at the chips' font size
    margins = 12 * (theme.sizes.tick + 2)  # title, subtitle and the legend below, at the theme's sizes
    return style(fig, theme, title=title, height=int(margins + line * (row + 1)), legend=True)


def expert_matrix(weights, tokens, *, title: str | None = None, theme: Theme | None = None) -> go.Figure:
    """Token × expert: the router's weight on each chosen expert (0: not chosen). weights: (N, E)."""
    from viz.figures.heatmaps import matrix_heatmap

    w = np.asarray(weights, dtype=np.float32)
    fig = matrix_heatmap(
        w,
        tokens,
        col_labels=[f"e{e}" for e in range(w.shape[1])],
        title=title,
        diverging=False,
        theme=theme,
        value_name="router weight",
        zmax=float(w.max()) if w.size else 1.0,
    )
    update_axes(fig, "x", title={"text": "expert"})
    return fig


def expert_load(load, *, title: str | None = None, theme: Theme | None = None) -> go.Figure:
    """Each expert's share of the token choices (E,), beside the share an even router would give each."""
    theme = theme or Theme()
    load = np.asarray(load, dtype=np.float64)
    E = len(load)
    fig = figure(
        go.Bar(x=[f"e{e}" for e in range(E)], y=load, name="share of the choices",
               marker={"color": HEAD_COLOURS[0]}, hovertemplate="expert %{x}: %{y:.1%}<extra></extra>")
    )  # fmt: skip
    fig.add_trace(
        go.Scatter(x=[f"e{e}" for e in range(E)], y=[1 / E] * E, mode="lines", name="even (1/E)",
                   line={"dash": "dash", "color": "#5c5b59", "width": 2 * theme.line_scale})
    )  # fmt: skip
    update_axes(fig, "y", tickformat=".0%", title={"text": "share of choices"}, rangemode="tozero")
    update_axes(fig, "x", title={"text": "expert"}, type="category")
    return style(fig, theme, title=title, height=360, legend=True)
