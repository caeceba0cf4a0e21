"""Figures of a training run ("Watch it learn"): the loss and every head's score on one time axis with the phase
change marked, and one head's pattern before, at and after it. Numpy in, figures out."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from viz.figures.common import Theme, as_array, check_labels, style
from viz.figures.headview import HEAD_COLOURS
from viz.figures.heatmaps import attention_heatmap
from viz.figures.layout import add_annotations, add_shapes, relayout, subplots, update_annotations, update_axes

#: heads told apart three ways, so no two look alike under colour-vision deficiency or in grey print: the head view's
#: palette (chosen for deuteranopia, protanopia and tritanopia; tests/viz/test_palette.py), a dash per head of a
#: layer and a marker per layer
DASHES = ("solid", "dash", "dot", "dashdot", "longdash", "longdashdot")
SYMBOLS = ("circle", "square", "diamond", "triangle-up", "x", "star")


def learning_curves(
    losses,
    steps,
    probe_loss,
    scores,
    *,
    smoothed=None,
    score_name: str = "task score",
    phase: int | None = None,
    now: int | None = None,
    chosen: tuple[int, int] | None = None,
    threshold: float | None = 0.5,
    title: str | None = None,
    theme: Theme | None = None,
) -> go.Figure:
    """losses (S,): training loss of steps 1 … S; steps (K,), probe_loss (K,) and scores (K, L, H): the snapshots;
    ``smoothed`` (S,): the smoothed loss drawn over the raw one; ``phase``: the step marked as the phase change;
    ``now``: the step the slider shows; ``chosen``: the head drawn thicker; ``threshold``: the score a head forms at
    (None: no line, and the score axis fits the values, as for entropy)."""
    theme = theme or Theme()
    losses = as_array("losses", losses, 1).astype(np.float64)
    steps = as_array("steps", steps, 1).astype(np.int64)
    probe_loss = as_array("probe_loss", probe_loss, 1).astype(np.float64)
    s = as_array("scores", scores, 3).astype(np.float64)
    if not (s.shape[0] == steps.size == probe_loss.size):
        raise ValueError(f"scores ({s.shape[0]}), steps ({steps.size}) and probe_loss ({probe_loss.size}) differ")
    L, H = s.shape[1:]
    fig = subplots(rows=2, cols=1, shared_xaxes=True, vertical_spacing=0.08, row_heights=[0.45, 0.55])
    x = np.arange(1, losses.size + 1)
    grey = theme.colors["grid"]
    fig.add_trace(go.Scatter(x=x, y=losses, mode="lines", line={"color": grey, "width": 1}, name="training loss",
                             hovertemplate="step %{x}: loss %{y:.3f}<extra></extra>"), row=1, col=1)  # fmt: skip
    if smoothed is not None:
        sm = as_array("smoothed", smoothed, 1)
        fig.add_trace(
            go.Scatter(
                x=x,
                y=sm,
                mode="lines",
                line={"color": theme.colors["text"], "width": 2.5},
                name="training loss, smoothed",
                hovertemplate="step %{x}: smoothed %{y:.3f}<extra></extra>",
            ),
            row=1,
            col=1,
        )
    fig.add_trace(go.Scatter(x=steps, y=probe_loss, mode="markers", marker={"color": "#d62728", "size": 5},
                             name="held-out loss", hovertemplate="step %{x}: held-out %{y:.3f}<extra></extra>"),
                  row=1, col=1)  # fmt: skip
    for layer in range(L):
        for head in range(H):
            bold = chosen == (layer, head)
            color = HEAD_COLOURS[(layer * H + head) % len(HEAD_COLOURS)]
            fig.add_trace(
                go.Scatter(
                    x=steps, y=s[:, layer, head], mode="lines+markers", name=f"L{layer}H{head}",
                    line={"color": color, "width": 4 if bold else 1.8, "dash": DASHES[head % len(DASHES)]},
                    marker={"symbol": SYMBOLS[layer % len(SYMBOLS)], "size": 9 if bold else 7, "color": color,
                            "maxdisplayed": 10},
                    hovertemplate=f"L{layer}H{head}, step %{{x}}: {score_name} %{{y:.2f}}<extra></extra>",
                ),
                row=2, col=1,
            )  # fmt: skip
    line = {"color": "#868e96", "dash": "dash", "width": 1.5}  # the score a head "forms" at
    shapes = (
        []
        if threshold is None
        else [dict(type="line", xref="paper", yref="y2", x0=0, x1=1, y0=threshold, y1=threshold, line=line)]
    )
    notes = (
        []
        if threshold is None
        else [
            dict(
                x=0.01,
                y=threshold,
                xref="paper",
                yref="y2",
                xanchor="left",
                yanchor="bottom",
                showarrow=False,
                text=f"formed at {threshold:g}",
                font={"color": "#868e96", "size": theme.sizes.tick},
            )
        ]
    )
    later = now is not None and phase is not None and now >= phase  # labels lean away from each other
    marks = ((phase, "phase change", "#d62728", "right" if later else "left"),
             (now, "shown", theme.colors["text"], "left" if later else "right"))  # fmt: skip
    for step, label, color, side in marks:
        if step is None:
            continue
        shapes.append(
            dict(
                type="line",
                xref="x",
                yref="paper",
                x0=step,
                x1=step,
                y0=0,
                y1=1,
                line={"color": color, "dash": "dot" if label == "shown" else "dash", "width": 2},
            )
        )
        font = {"color": color, "size": theme.sizes.tick}
        notes.append(dict(x=step, y=1.0, xref="x", yref="paper", yanchor="bottom", xanchor=side, showarrow=False,
                          text=f" {label}: step {step:,} ", font=font))  # fmt: skip
    add_shapes(fig, *shapes)
    add_annotations(fig, *notes)
    update_axes(fig, "y", title_text="loss (nats)", row=1, col=1, rangemode="tozero")
    fixed = {"range": [0, 1.02]} if threshold is not None else {"rangemode": "tozero"}
    update_axes(fig, "y", title_text=score_name, row=2, col=1, **fixed)
    update_axes(fig, "x", title_text="training step", row=2, col=1)
    style(fig, theme, title=title, height=620 if not theme.presentation else 760, legend=True)
    relayout(fig, hovermode="x unified" if L * H <= 12 else "closest")
    return fig


def before_after(
    patterns, tokens, steps, *, head: str, title=None, theme: Theme | None = None, masked=None, key_tokens=None
):
    """patterns (3, N, N): one head at three steps (before, at, after the phase change); tokens: N labels; steps:
    3 ints; ``masked`` (N, N): cells a mask blocks (grey); ``key_tokens``: M labels when patterns are (3, N, M)
    (cross-attention). Three heatmaps side by side on one colour scale."""
    theme = theme or Theme()
    p = as_array("patterns", patterns, 3).astype(np.float32)
    if p.shape[0] != len(steps):
        raise ValueError(f"one step per pattern: {p.shape[0]} patterns, {len(steps)} steps")
    labels = check_labels("tokens", tokens, p.shape[-2])
    keys = check_labels("key_tokens", key_tokens, p.shape[-1]) if key_tokens is not None else None
    names = ("before", "at", "after") if len(steps) == 3 else tuple(f"step {s:,}" for s in steps)
    fig = subplots(rows=1, cols=len(steps), horizontal_spacing=0.12,
                   subplot_titles=[f"{n}: step {s:,}" for n, s in zip(names, steps, strict=True)])  # fmt: skip
    for i, pattern in enumerate(p):
        single = attention_heatmap(pattern, labels, key_tokens=keys, theme=theme, masked=masked)
        for trace in single.data:
            scale = i == len(steps) - 1 and trace.name != "masked"  # one colour bar, the weights'
            trace.update(showscale=scale, xaxis=f"x{i + 1}", yaxis=f"y{i + 1}")
            if trace.name != "masked":
                trace.update(zmin=0, zmax=1)
            fig.add_trace(trace, row=1, col=i + 1)
        # category axes: labels such as "3" and "5" (digits of a date) are names, not coordinates
        update_axes(fig, "y", row=1, col=i + 1, autorange="reversed", showticklabels=i == 0, tickfont={"size": 9},
                    type="category")  # fmt: skip
        update_axes(fig, "x", row=1, col=i + 1, tickfont={"size": 9}, tickangle=-90, type="category")
    fig = style(fig, theme, title=title or f"{head} before, at and after", height=460, above=1)
    if theme.box:  # a slide: panel titles as large as the axis titles (its layout budgets them)
        update_annotations(fig, {"font": {"size": theme.sizes.axis_title, "color": theme.colors["text"]}})
    return fig
