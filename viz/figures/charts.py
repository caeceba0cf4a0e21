"""Bars and lines: per-token changes, predictions, per-head metric spreads, the √d_k curves."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from viz.figures.common import CHAR_EM, Theme, style, thinned, tick_budget, token_labels, unique_labels
from viz.figures.layout import figure, subplots, update_annotations, update_axes


def change_bars(
    tokens,
    values,
    *,
    title: str | None = None,
    theme: Theme | None = None,
    x_title: str = "relative change",
    highlight: int | None = None,
) -> go.Figure:
    """One bar per token (e.g. how much ablation changed its output); bar ``highlight`` in blue."""
    theme = theme or Theme()
    labels = token_labels(tokens, theme.positions)
    colours = ["#3b5bdb" if i == highlight else "#e8590c" for i in range(len(labels))]
    fig = figure(go.Bar(x=labels, y=list(values), marker_color=colours, hovertemplate="%{x}: %{y:.4f}<extra></extra>"))
    axis = thinned(labels, tick_budget(1000, theme.sizes.tick))
    update_axes(fig, "x", type="category", **axis)
    update_axes(fig, "y", title={"text": x_title})
    # Labels may stand on end below the bars: make the figure taller by their length so the bars keep room.
    longest = max((len(t) for t in axis["ticktext"]), default=0) if len(labels) > 12 else 0
    height = (440 if theme.presentation else 400) + int(min(240, longest * CHAR_EM * theme.sizes.tick))
    return style(fig, theme, title=title, height=height)


def prediction_bars(tokens, probs, *, title: str | None = None, theme: Theme | None = None) -> go.Figure:
    """Top-k predictions as horizontal bars (best on top)."""
    labels = unique_labels(tokens)
    theme = theme or Theme()
    fig = figure(
        go.Bar(
            x=list(probs),
            y=labels,
            orientation="h",
            marker_color="#4263eb",
            hovertemplate="%{y}: %{x:.2%}<extra></extra>",
        )
    )
    update_axes(fig, "y", autorange="reversed", type="category")
    top = float(np.max(probs)) if len(probs) else 1.0
    # ticks step by a fifth of the top or so: a flat guess (every bar near 0.3 %) needs decimals, or every tick says 0 %
    digits = 2 if top < 0.05 else 1 if top < 0.2 else 0
    update_axes(fig, "x", title={"text": "probability"}, tickformat=f".{digits}%")
    return style(fig, theme, title=title, height=140 + (44 if theme.presentation else 32) * len(labels))


def metric_spread(
    values: dict[str, np.ndarray], metric: str, *, title: str | None = None, theme: Theme | None = None
) -> go.Figure:
    """One strip per model: each dot a head's value of ``metric``. values: {model name: (K,)}."""
    theme = theme or Theme()
    fig = figure()
    for name, v in values.items():
        v = np.asarray(v, dtype=float).ravel()
        fig.add_trace(
            go.Box(
                y=v,
                name=name,
                boxpoints="all",
                jitter=0.4,
                pointpos=0,
                marker={"size": 7 * theme.line_scale},
                hovertemplate=f"{name}<br>{metric}: %{{y:.3f}}<extra></extra>",
            )
        )
    update_axes(fig, "y", title={"text": metric})
    return style(fig, theme, title=title, height=460, legend=False)


def scaling_figure(demo: dict, *, real: dict | None = None, theme: Theme | None = None) -> go.Figure:
    """Entropy, max weight and softmax-gradient norm against d_k, with and without 1/√d_k."""
    theme = theme or Theme()
    fig = subplots(
        rows=1,
        cols=3,
        horizontal_spacing=0.1,
        subplot_titles=("entropy (nats)", "largest weight", "softmax gradient ‖J‖"),
    )
    for col, metric in enumerate(("entropy", "max_weight", "gradient"), start=1):
        for variant, colour, dash in (("scaled", "#4263eb", "solid"), ("unscaled", "#e8590c", "dash")):
            fig.add_trace(
                go.Scatter(
                    x=demo["d_k"],
                    y=demo[f"{metric}_{variant}"],
                    mode="lines+markers",
                    name=f"{variant}",
                    line={"color": colour, "dash": dash, "width": 2 * theme.line_scale},
                    showlegend=col == 1,
                    hovertemplate=f"d_k %{{x}}<br>{variant}: %{{y:.4f}}<extra></extra>",
                ),
                1,
                col,
            )
        d_ks = [int(d) for d in demo["d_k"]]
        update_axes(
            fig, "x", type="log", title={"text": "d_k"}, tickvals=d_ks, ticktext=[str(d) for d in d_ks], row=1, col=col
        )
    style(fig, theme, title="Random q, k: why attention divides by √d_k", height=460, legend=True, above=1)
    update_annotations(fig, {"font": {"size": theme.sizes.axis_title, "color": theme.colors["text"]}, "yshift": 6})
    return fig


def agreement_scatter(
    x,
    y,
    names: list[str],
    *,
    x_title: str,
    y_title: str,
    title: str | None = None,
    theme: Theme | None = None,
) -> go.Figure:
    """One dot per cell, its value by one method against another's, with the line y = x where they agree.
    x, y: (K,) with NaN left out; names: (K,) what each dot is (shown on hover)."""
    theme = theme or Theme()
    x, y = np.asarray(x, dtype=float).ravel(), np.asarray(y, dtype=float).ravel()
    keep = np.isfinite(x) & np.isfinite(y)
    x, y, names = x[keep], y[keep], [n for n, k in zip(names, keep, strict=True) if k]
    lo = float(min(x.min(), y.min(), 0.0)) if x.size else 0.0
    hi = float(max(x.max(), y.max(), 0.0)) if x.size else 1.0
    fig = figure(
        [
            go.Scatter(
                x=[lo, hi],
                y=[lo, hi],
                mode="lines",
                line={"color": "#adb5bd", "dash": "dash", "width": 1.5 * theme.line_scale},
                hoverinfo="skip",
                name="agree",
            ),
            go.Scatter(
                x=x,
                y=y,
                mode="markers",
                text=names,
                marker={"size": 8 * theme.line_scale, "color": "#3b5bdb", "opacity": 0.75},
                hovertemplate=f"%{{text}}<br>{x_title}: %{{x:.3f}}<br>{y_title}: %{{y:.3f}}<extra></extra>",
                name="cells",
            ),
        ]
    )
    update_axes(fig, "x", title={"text": x_title}, zeroline=True)
    update_axes(fig, "y", title={"text": y_title}, zeroline=True, scaleanchor="x", scaleratio=1)
    return style(fig, theme, title=title, height=520, legend=False)
