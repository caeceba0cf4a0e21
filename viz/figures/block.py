"""The block diagram of a model (boxes and arrows from its parts) and its residual stream's size through the blocks.

``parts``: dicts with key, label, detail, kind, lane (0: the residual stream; 1, 2: branches), row (from the
bottom) and page; ``edges``: (from key, to key) pairs, data flowing upward (model/anatomy.py makes both).
"""

from __future__ import annotations

import html

import numpy as np
import plotly.graph_objects as go

from viz.figures.common import Theme, boxed, style
from viz.figures.layout import add_annotations, add_shapes, figure, subplots, update_annotations, update_axes

KIND_COLOURS = {
    "input": "#e9ecef",
    "embed": "#d3f9d8",
    "norm": "#fff3bf",
    "attention": "#ffd8a8",
    "ff": "#d0ebff",
    "add": "#f1f3f5",
    "head": "#e5dbff",
}
LANE_X = 1.7  # data units between lanes
BOX_W, BOX_H = 1.45, 0.62  # a box, in data units (rows are 1 apart)
ATTENTION, FEED_FORWARD, CROSS = "#e8590c", "#1c7ed6", "#0c8599"


def _box(part: dict) -> tuple[float, float, float, float]:
    x, y = part["lane"] * LANE_X, float(part["row"])
    w = 0.42 if part["kind"] == "add" else BOX_W
    h = 0.42 if part["kind"] == "add" else BOX_H
    return x - w / 2, x + w / 2, y - h / 2, y + h / 2


def _path(a: dict, b: dict) -> list[tuple[float, float]]:
    """Elbow from part a to part b: out of a's top (or side), into b's bottom (or side)."""
    ax, ay, bx, by = a["lane"] * LANE_X, a["row"], b["lane"] * LANE_X, b["row"]
    y1 = _box(a)[3]
    _, u1, v0, _ = _box(b)
    if ax == bx:
        return [(ax, y1), (bx, v0)]
    if ay == by and bx < ax:  # side by side (the encoder's output into cross-attention): out of a's left side
        return [(_box(a)[0], ay), (u1, by)]
    if bx > ax:  # stream -> branch: up a little, across, up into the box
        mid = ay + 0.5
        return [(ax, y1), (ax, mid), (bx, mid), (bx, v0)]
    return [(ax, y1), (ax, by), (u1, by)]  # branch -> stream: up to b's row, then into its side


def block_diagram(
    parts: list[dict],
    edges: list[tuple[str, str]],
    *,
    block_rows: tuple[int, int],
    n_layers: int,
    title: str | None = None,
    theme: Theme | None = None,
) -> go.Figure:
    """Boxes (a click reports the part's [key, page]) and arrows; the repeated block framed and marked × L."""
    theme = theme or Theme()
    if not parts:
        raise ValueError("a block diagram needs at least one part")
    by_key = {p["key"]: p for p in parts}
    sizes, colours = theme.sizes, theme.colors
    rows = max(p["row"] for p in parts) + 1
    lanes = max(p["lane"] for p in parts) + 1
    height = boxed(theme, 150 + rows * (62 if theme.presentation else 50), 720)[1]
    shapes, notes, traces = [], [], []
    for a, b in edges:
        pts = _path(by_key[a], by_key[b])
        xs, ys = zip(*pts)
        traces.append(
            go.Scatter(
                x=xs,
                y=ys,
                mode="lines",
                hoverinfo="skip",
                showlegend=False,
                line={"color": colours["muted"], "width": 1.6 * theme.line_scale},
            )
        )
        notes.append(
            {
                "x": xs[-1],
                "y": ys[-1],
                "ax": xs[-2],
                "ay": ys[-2],
                "xref": "x",
                "yref": "y",
                "axref": "x",
                "ayref": "y",
                "showarrow": True,
                "arrowhead": 2,
                "arrowsize": 1.1,
                "arrowcolor": colours["muted"],
                "arrowwidth": 1.6 * theme.line_scale,
                "text": "",
                "standoff": 0,
            }
        )
    lo, hi = block_rows
    frame_x = (-LANE_X * 0.62, (lanes - 1) * LANE_X + BOX_W * 0.62)
    shapes.append(
        {
            "type": "rect",
            "x0": frame_x[0],
            "x1": frame_x[1],
            "y0": lo - 0.55,
            "y1": hi + 0.5,
            "line": {"color": colours["muted"], "dash": "dash", "width": theme.line_scale},
            "layer": "below",
        }
    )
    notes.append(
        {
            "x": frame_x[1],
            "y": hi + 0.5,
            "xref": "x",
            "yref": "y",
            "xanchor": "right",
            "yanchor": "bottom",
            "showarrow": False,
            "text": f"<b>× {n_layers} layer{'s' if n_layers != 1 else ''}</b>",
            "font": {"size": sizes.base, "color": colours["text"]},
        }
    )
    xs, ys, data, hover = [], [], [], []
    for p in parts:
        x0, x1, y0, y1 = _box(p)
        fill = KIND_COLOURS.get(p["kind"], "#f8f9fa")
        shapes.append(
            {
                "type": "circle" if p["kind"] == "add" else "rect",
                "x0": x0,
                "x1": x1,
                "y0": y0,
                "y1": y1,
                "fillcolor": fill,
                "line": {"color": "#495057", "width": theme.line_scale},
                "layer": "above",
            }
        )
        notes.append(
            {
                "x": (x0 + x1) / 2,
                "y": (y0 + y1) / 2,
                "xref": "x",
                "yref": "y",
                "showarrow": False,
                "text": html.escape(p["label"]),
                "font": {"size": sizes.base, "color": "#111111"},
            }
        )
        for fx in np.linspace(x0 + 0.08, x1 - 0.08, 1 if p["kind"] == "add" else 5):  # click targets over the box
            xs.append(float(fx))
            ys.append(float(p["row"]))
            data.append([p["key"], p["page"]])
            hover.append(f"<b>{html.escape(p['label'])}</b><br>{html.escape(p['detail'])}")
    traces.append(
        go.Scatter(
            x=xs,
            y=ys,
            mode="markers",
            customdata=data,
            hovertext=hover,
            showlegend=False,
            hovertemplate="%{hovertext}<extra></extra>",
            marker={"size": 26 * theme.line_scale, "opacity": 0.01, "color": "#000000", "symbol": "square"},
        )
    )
    fig = figure(traces)
    span = (frame_x[0] - 0.1, frame_x[1] + 0.1)
    update_axes(fig, "x", visible=False, range=list(span), fixedrange=True)
    update_axes(fig, "y", visible=False, range=[-0.6, rows - 0.4], fixedrange=True)
    add_shapes(fig, *shapes)
    add_annotations(fig, *notes)
    fig = style(fig, theme, title=title, height=height)
    fig.layout.dragmode = False
    return fig


def stream_chart(
    columns: list[dict],
    *,
    title: str | None = None,
    theme: Theme | None = None,
) -> go.Figure:
    """The stream's norm after every sublayer (top) and each sublayer's ‖output‖ / ‖stream‖ (bottom), one column
    per model. ``columns``: dicts with name, labels (S,), norm (S,), ratio (P·L,) and optionally parts (P,), each
    block's sublayers (default attention and feed-forward; a decoder that reads a source: cross-attention too)."""
    theme = theme or Theme()
    k = len(columns)
    if k == 0:
        raise ValueError("stream_chart needs at least one model")
    for c in columns:
        if len(c["norm"]) != len(c["labels"]) or len(c["ratio"]) != len(c["labels"]) - 1:
            raise ValueError("norm needs one value per label and ratio one per sublayer (labels − 1)")
    named = [f"{c['name']}: " if k > 1 else "" for c in columns]
    titles = [f"{n}‖stream‖ after each sublayer" for n in named] + [f"{n}‖added‖ / ‖stream‖" for n in named]
    fig = subplots(rows=2, cols=k, subplot_titles=titles, vertical_spacing=0.22, horizontal_spacing=0.1)
    width = 3 * theme.line_scale
    for j, c in enumerate(columns, start=1):
        labels = list(c["labels"])
        parts = tuple(c.get("parts", ("attention", "feed-forward")))
        x = np.arange(len(labels))  # 0: the embedding; P·i + 1 … P·i + P: after each sublayer of layer i
        fig.add_trace(
            go.Scatter(
                x=x,
                y=np.asarray(c["norm"], float),
                customdata=labels,
                mode="lines+markers",
                showlegend=False,
                line={"color": "#343a40", "width": width},
                marker={"size": 4 * theme.line_scale},
                hovertemplate="after %{customdata}: ‖stream‖ %{y:.3g}<extra></extra>",
            ),
            row=1,
            col=j,
        )
        ratio = np.asarray(c["ratio"], float)
        colour = [CROSS if "cross" in lab else ATTENTION if "attention" in lab else FEED_FORWARD for lab in labels[1:]]
        fig.add_trace(
            go.Bar(
                x=x[1:],
                y=ratio,
                customdata=labels[1:],
                marker_color=colour,
                showlegend=False,
                hovertemplate="%{customdata}: %{y:.3f}<extra></extra>",
            ),
            row=2,
            col=j,
        )
        P = len(parts)
        layers = (len(labels) - 1) // P
        every = max(1, int(np.ceil(layers / (12 if k == 1 else 6))))
        ticks = [P * i + P for i in range(0, layers, every)]  # x = 0, the embedding, is named by its hover
        text = [f"L{i}" for i in range(0, layers, every)]
        for r in (1, 2):  # on a slide the upper panel's labels (the same layers) would meet the lower's title
            update_axes(fig, "x", row=r, col=j, tickvals=ticks, ticktext=text, range=[-0.6, len(labels) - 0.4],
                        showticklabels=r == 2 or not theme.box)  # fmt: skip
        order = ", ".join(parts[:-1]) + f", then {parts[-1]}"
        update_axes(fig, "x", row=2, col=j, title={"text": f"after layer ({order})"})
        update_axes(fig, "y", row=1, col=j, rangemode="tozero")
        update_axes(fig, "y", row=2, col=j, rangemode="tozero")
    fig.add_trace(go.Bar(x=[None], y=[None], marker_color=ATTENTION, name="attention"), row=2, col=1)
    if any("cross-attention" in c.get("parts", ()) for c in columns):
        fig.add_trace(go.Bar(x=[None], y=[None], marker_color=CROSS, name="cross-attention"), row=2, col=1)
    fig.add_trace(go.Bar(x=[None], y=[None], marker_color=FEED_FORWARD, name="feed-forward"), row=2, col=1)
    height = boxed(theme, 620 if theme.presentation else 560, 760 * k)[1]
    fig = style(fig, theme, title=title, height=height, legend=True, above=1)
    if theme.box:  # a slide: panel titles as large as the axis titles (its layout budgets them)
        update_annotations(fig, {"font": {"size": theme.sizes.axis_title, "color": theme.colors["text"]}})
    return fig


def growth_chart(series: list[dict], *, title: str | None = None, theme: Theme | None = None) -> go.Figure:
    """Several models' streams on one axis: ‖stream‖ relative to its size after the embedding, over the depth
    (0: the embedding, 1: after the last sublayer), so models of different depths compare. ``series``: dicts
    with name, labels (S,) and norm (S,)."""
    theme = theme or Theme()
    if not series:
        raise ValueError("growth_chart needs at least one model")
    colours = ["#e8590c", "#1c7ed6", "#2f9e44", "#868e96"]
    fig = figure()
    for colour, s in zip(colours, series):
        norm = np.asarray(s["norm"], float)
        if len(norm) != len(s["labels"]) or len(norm) < 2:
            raise ValueError("one norm per label, two or more")
        fig.add_trace(
            go.Scatter(
                x=np.linspace(0, 1, len(norm)),
                y=norm / max(norm[0], 1e-12),
                customdata=list(s["labels"]),
                mode="lines+markers",
                name=s["name"],
                line={"color": colour, "width": 3 * theme.line_scale},
                marker={"size": 5 * theme.line_scale},
                hovertemplate=f"{html.escape(s['name'])}, after %{{customdata}}: ×%{{y:.2f}}<extra></extra>",
            )
        )
    update_axes(fig, "x", title={"text": "depth (0: the embedding, 1: after the last sublayer)"}, range=[-0.02, 1.02])
    update_axes(fig, "y", title={"text": "× the embedding"}, rangemode="tozero")
    return style(fig, theme, title=title, height=boxed(theme, 460)[1], legend=True)
