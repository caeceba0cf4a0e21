"""Queries and keys: one query's weights term by term, and queries and keys in one plane."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from viz.figures.common import (
    Theme,
    as_array,
    boxed,
    check_labels,
    set_export_width,
    style,
    thinned,
    tick_budget,
    token_labels,
)
from viz.figures.layout import add_annotations, figure, subplots, update_annotations, update_axes


def query_explained(qe, tokens, query_label: str, *, at: int | None = None, theme: Theme | None = None) -> go.Figure:
    """q ⊙ k_j per dimension (left), then their sums, the scaled scores (plus the position term, for a model that
    adds one to its scores), and the softmax weights (right; with a learned sink, its share in the panel's title).

    qe: a :class:`model.analysis.steps.QueryExplained` for M keys; tokens: M key labels. ``at``: the query's
    position, named in the title (“the”·5) when the text has another token like it."""
    theme = theme or Theme()
    keys = token_labels(tokens, theme.positions)
    m, d = qe.products.shape
    scaled = np.where(np.isfinite(qe.scaled), qe.scaled, np.nan)
    bars = [(qe.scores, "q·kⱼ", "q·k", "#868e96"), (scaled, "scaled", "scaled", "#4263eb")]
    if qe.position is not None:  # T5, MPNet, DeBERTa: the scores' position term, added before the softmax
        bars.append((scaled + qe.position, "+ position", "scaled + position", "#0c8599"))
    weight = "weight" if qe.sink is None else f"weight (sink {qe.sink:.0%})"
    bars.append((qe.weights, weight, "weight", "#e8590c"))
    side = 0.54 / len(bars)
    fig = subplots(
        rows=1,
        cols=1 + len(bars),
        column_widths=[0.46] + [side] * len(bars),
        shared_yaxes=True,
        horizontal_spacing=0.03,
        subplot_titles=(f"q ⊙ kⱼ ({m}×{d})", *(title for _, title, _, _ in bars)),
    )
    bound = float(np.abs(qe.products).max()) or 1.0
    dims = [f"d{j}" for j in range(d)]
    fig.add_trace(
        go.Heatmap(
            z=qe.products,
            y=keys,
            x=dims,
            colorscale=theme.diverging,
            zmin=-bound,
            zmax=bound,
            colorbar={  # at the right, as usual; it is the left panel's scale (the others are bars)
                "title": {"text": "q⊙k<br>(left)", "font": {"size": theme.sizes.axis_title}},
                "tickfont": {"size": theme.sizes.tick},
            },
            hovertemplate="key: %{y}<br>%{x}: q·k part %{z:.4f}<extra></extra>",
        ),
        1,
        1,
    )
    for col, (vals, _, name, colour) in enumerate(bars, start=2):
        fig.add_trace(
            go.Bar(
                x=vals,
                y=keys,
                orientation="h",
                marker_color=colour,
                name=name,
                showlegend=False,
                hovertemplate=f"key: %{{y}}<br>{name}: %{{x:.4f}}<extra></extra>",
            ),
            1,
            col,
        )
    height = max(340, min(940, (26 if theme.presentation else 20) * m + 180))
    update_axes(
        fig, "y", autorange="reversed", type="category", **thinned(keys, tick_budget(height - 180, theme.sizes.tick))
    )
    update_axes(fig, "x", type="category", nticks=8, row=1, col=1)
    update_axes(fig, "x", nticks=4)
    style(
        fig,
        theme,
        title=f"How query “{query_label.strip() or query_label}”{'' if at is None else f'·{at}'} weighs every key",
        height=height,
        above=1,
    )
    update_annotations(fig, {"font": {"size": theme.sizes.axis_title, "color": theme.colors["text"]}, "yshift": 6})
    return fig


def qk_scatter(
    coords_q,
    coords_k,
    tokens,
    ratio,
    *,
    labelled=None,
    labelled_keys=None,
    title: str | None = None,
    theme: Theme | None = None,
) -> go.Figure:
    """Queries (circles) and keys (diamonds) in one 2-D plane, coloured by position.

    coords_q, coords_k: (N, 2); ratio: the variance share of each axis. ``labelled``: positions whose
    query (and key, unless ``labelled_keys`` names the keys separately) carry a text label ("query: it",
    "key: animal"; default: the first 8); every point names its token on hover.
    """
    cq = as_array("coords_q", coords_q, 2)
    ck = as_array("coords_k", coords_k, 2)
    theme = theme or Theme()
    labels = token_labels(check_labels("tokens", tokens, cq.shape[0]), theme.positions)
    n = len(labels)
    shown = set(range(min(n, 8)) if labelled is None else (int(i) for i in labelled if 0 <= int(i) < n))
    shown_keys = shown if labelled_keys is None else {int(i) for i in labelled_keys if 0 <= int(i) < n}
    pos = np.arange(n)
    fig = figure()
    for coords, name, one, symbol in ((cq, "queries", "query", "circle"), (ck, "keys", "key", "diamond")):
        fig.add_trace(
            go.Scatter(
                x=coords[:, 0],
                y=coords[:, 1],
                mode="markers",
                name=name,
                hovertext=labels,
                customdata=pos,
                marker={
                    "symbol": symbol,
                    "size": 11 * theme.line_scale,
                    "color": pos,
                    "colorscale": theme.colorscale,
                    "line": {"width": 1, "color": "#333"},
                    "showscale": name == "keys",
                    "colorbar": {"title": {"text": "position"}},
                },
                hovertemplate=f"{one} %{{hovertext}} (position %{{customdata}})<extra></extra>",
            )
        )
    # text labels as annotations, each pushed (with a leader line) to where it covers no other label or point
    named = [(cq[i], f"query: {labels[i]}") for i in sorted(shown)] + [
        (ck[i], f"key: {labels[i]}") for i in sorted(shown_keys)
    ]
    everything = np.concatenate([cq, ck])
    offsets = label_offsets(np.array([p for p, _ in named]).reshape(-1, 2), [t for _, t in named], everything, theme)
    notes = [
        dict(
            x=float(point[0]),
            y=float(point[1]),
            text=text,
            ax=dx,
            ay=dy,
            showarrow=True,
            arrowhead=0,
            arrowwidth=1,
            arrowcolor="#888",
            standoff=4,
            font={"size": theme.sizes.tick},
        )
        for (point, text), (dx, dy) in zip(named, offsets, strict=True)
    ]
    add_annotations(fig, *notes)
    update_axes(fig, "x", title={"text": f"PC1 ({ratio[0]:.0%} of variance)"})
    update_axes(fig, "y", title={"text": f"PC2 ({ratio[1]:.0%} of variance)"})
    return style(fig, theme, title=title, height=620 if theme.presentation else 560, legend=True)


PLOT_PX = (640.0, 420.0)  # the plot area assumed for spacing labels (about the screen and export size)
_CANDIDATES = [  # label centre offsets in px from its point: close ones first, then further out
    (r * dx, r * dy)
    for r in (1.0, 1.8, 2.8)
    for dx, dy in ((0, -1), (0, 1), (1, 0), (-1, 0), (1, -1), (-1, -1), (1, 1), (-1, 1))
]


def label_offsets(points, texts, obstacles, theme: Theme) -> list[tuple[float, float]]:
    """Where each label goes, as the (ax, ay) pixel offset of its centre from its point (plotly's annotation
    arrow tail): of the candidates around the point, the one whose box overlaps no label placed before, stays
    inside the plot and covers the fewest points, the nearest first.

    points: (L, 2) data coordinates of the labelled points; texts: L labels; obstacles: (P, 2) every drawn point."""
    font = theme.sizes.tick
    every = np.asarray(obstacles, dtype=float).reshape(-1, 2)
    lo, hi = every.min(axis=0), every.max(axis=0)
    span = np.where(hi - lo > 0, hi - lo, 1.0)

    def to_px(xy):  # data → assumed pixels, y down like the screen's
        u = (np.asarray(xy, dtype=float) - lo) / span
        return np.stack([u[..., 0] * PLOT_PX[0], (1 - u[..., 1]) * PLOT_PX[1]], axis=-1)

    dots = to_px(every)
    marker = 7.0 * theme.line_scale  # half a marker, px
    placed: list[tuple[float, float, float, float]] = []  # boxes: centre x, centre y, half width, half height
    out = []
    for xy, text in zip(to_px(points), texts, strict=True):
        hw, hh = 0.3 * font * len(text) + 3, 0.65 * font + 2
        best, best_cost = (0.0, -(hh + marker)), np.inf
        for cx, cy in _CANDIDATES:
            ox, oy = cx * (hw + marker), cy * (hh + marker)
            bx, by = xy[0] + ox, xy[1] + oy
            cost = sum(
                max(0.0, min(bx + hw, px + pw) - max(bx - hw, px - pw))
                * max(0.0, min(by + hh, py + ph) - max(by - hh, py - ph))
                for px, py, pw, ph in placed
            )
            edge = 12.0  # keep clear of the plot's border: a label past it would leave the image
            outside = sum(
                max(0.0, v)
                for v in (bx + hw + edge - PLOT_PX[0], hw + edge - bx, by + hh + edge - PLOT_PX[1], hh + edge - by)
            )
            cost += 1000.0 * outside
            inside = (np.abs(dots[:, 0] - bx) < hw + marker) & (np.abs(dots[:, 1] - by) < hh + marker)
            cost += 50.0 * int(inside.sum()) + 0.01 * (ox * ox + oy * oy) ** 0.5
            if cost < best_cost:
                best, best_cost = (ox, oy), cost
        placed.append((xy[0] + best[0], xy[1] + best[1], hw, hh))
        out.append((float(best[0]), float(best[1])))
    return out


def query_in_heads(weights, tokens, query_label: str, *, title: str | None = None, theme: Theme | None = None):
    """Where one query looks in every head of a layer: one row per head over the keys, each row's strongest key
    marked with its weight (the callout a slide's takeaway names).

    weights: (H, N) the query's attention row in each head; tokens: N key labels."""
    theme = theme or Theme()
    w = as_array("weights", weights, 2).astype(np.float32)
    keys = token_labels(check_labels("tokens", tokens, w.shape[1]), theme.positions)
    heads = [f"head {h}" for h in range(w.shape[0])]
    fig = figure(
        go.Heatmap(
            z=w,
            x=keys,
            y=heads,
            colorscale=theme.colorscale,
            zmin=0,
            zmax=1,
            name="weight",
            colorbar={"title": {"text": "weight"}},
            hovertemplate=f"%{{y}}: {query_label} → %{{x}}<br>weight: %{{z:.3f}}<extra></extra>",
        )
    )
    top = w.argmax(axis=1)  # (H,): each head's strongest key
    add_annotations(
        fig,
        *(
            {
                "x": keys[int(j)],
                "y": heads[h],
                "text": f"<b>{w[h, j]:.2f}</b>",
                "showarrow": False,
                "font": {"size": theme.sizes.tick - 4, "color": "#111111" if w[h, j] > 0.6 else "#ffffff"},
            }
            for h, j in enumerate(top)
        ),
    )
    width, height = boxed(theme, 300 + (52 if theme.presentation else 34) * w.shape[0])
    update_axes(fig, "y", autorange="reversed", type="category")
    budget = tick_budget(width - 320, theme.sizes.tick)  # less the head names and the colour bar
    update_axes(fig, "x", type="category", tickangle=-90, **thinned(keys, budget, top))
    set_export_width(fig, width)
    return style(fig, theme, title=title or f"Where {query_label} looks in every head", height=height)
