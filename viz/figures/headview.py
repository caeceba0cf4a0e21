"""BertViz-style head view: query tokens left, key tokens right, line opacity = attention weight."""

from __future__ import annotations

import base64

import numpy as np
import plotly.graph_objects as go

from viz.figures.common import Theme, as_array, check_labels, style, token_labels
from viz.figures.layout import figure, update_axes
from viz.figures.palette import text_on

#: one colour per head, chosen by scripts/choose_palette.py so that any two stay at least 13 CIEDE2000 apart with
#: typical vision, protanopia, deuteranopia and tritanopia (the Okabe–Ito set merged heads 2, 3 and 8 into one grey
#: under deuteranopia, 2.1 apart), all of CIELAB lightness 35–75 so that lines show on white and on the dark theme
HEAD_COLOURS = (
    "#3C0FFF",
    "#005A78",
    "#5A5A5A",
    "#D20000",
    "#78694B",
    "#0087A5",
    "#878787",
    "#E17800",
    "#E15AFF",
    "#A5B4A5",
    "#B4B478",
    "#78C3D2",
)
LEVELS = 8  # opacity buckets: one trace per (head, bucket) instead of one per line
WINDOW = 60  # tokens shown at once: beyond this the view would be taller than a screen


def head_view(
    weights,
    tokens,
    *,
    head_labels=None,
    threshold: float = 0.05,
    window: tuple[int, int] | None = None,
    title: str | None = None,
    theme: Theme | None = None,
    focus: int = -1,
    sink=None,
) -> go.Figure:
    """Lines from each query token (left) to each key token (right) for one or several heads.

    weights: (H, N, N); lines with weight below ``threshold`` are hidden. Each head has its own colour.
    ``focus``: a query token (position among ``tokens``, -1: none) whose lines are drawn as on screen when it
    is picked: its own lines in the heads' colours, every other line faint grey, its label bold.
    ``window`` = (start, stop) shows only those tokens on both sides (default: the first WINDOW tokens), so
    the view keeps a readable height at any length; the title says which tokens are shown. ``sink`` (H, N): a
    learned sink's share of each row (gpt-oss), drawn as dashed, faded lines to a target below the keys.
    """
    w = as_array("weights", weights, 3).astype(np.float32)
    h, n, m = w.shape
    theme = theme or Theme()
    labels = token_labels(check_labels("tokens", tokens, n), theme.positions)
    if n != m:
        raise ValueError("head view needs square (self-attention) patterns")
    start, stop = window if window is not None else (0, min(n, WINDOW))
    if not 0 <= start < stop <= n:
        raise ValueError(f"window {(start, stop)} is outside the {n} tokens")
    if (start, stop) != (0, n):
        title = f"{title} — tokens {start}–{stop - 1} of {n}" if title else f"tokens {start}–{stop - 1} of {n}"
    w, labels, n = w[:, start:stop, start:stop], labels[start:stop], stop - start
    sink = None if sink is None else np.asarray(sink, dtype=np.float32)[:, start:stop]  # (H, n)
    focus = focus - start if start <= focus < stop else -1
    head_labels = [f"head {i}" for i in range(h)] if head_labels is None else [str(x) for x in head_labels]
    ys = -np.arange(n, dtype=float)
    fig = figure()
    top = float(np.nanmax(w)) if w.size else 1.0
    for i in range(h):
        colour = HEAD_COLOURS[i % len(HEAD_COLOURS)]
        q_idx, k_idx = np.nonzero(w[i] >= max(threshold, 1e-12))
        vals = w[i][q_idx, k_idx]
        bucket = np.minimum((vals / max(top, 1e-12) * LEVELS).astype(int), LEVELS - 1)
        first = True
        mine = q_idx == focus
        for level in range(LEVELS - 1, -1, -1):  # strongest first, so the legend entry is the boldest
            for own in (False, True) if focus >= 0 else (None,):  # the focus token's lines over the others
                sel = (bucket == level) & (mine if own else ~mine if own is False else True)
                if not sel.any():
                    continue
                xs = np.tile([0.0, 1.0, np.nan], sel.sum())
                yy = np.column_stack([ys[q_idx[sel]], ys[k_idx[sel]], np.full(sel.sum(), np.nan)]).ravel()
                faint = own is False
                fig.add_trace(
                    go.Scatter(
                        x=xs,
                        y=yy,
                        mode="lines",
                        line={"color": "#adb5bd" if faint else colour, "width": 2.0 * theme.line_scale},
                        opacity=0.12 if faint else 0.15 + 0.85 * (level + 1) / LEVELS,
                        hoverinfo="skip",
                        showlegend=first and not faint,
                        legendgroup=head_labels[i],
                        name=head_labels[i],
                    )
                )
                first = first and faint
    if sink is not None:
        _sink_lines(fig, sink, ys, threshold, max(top, float(sink.max(initial=0))), head_labels, theme)
    for x, anchor, side in ((0.0, "left", "query"), (1.0, "right", "key")):  # labels outside the lines
        fig.add_trace(
            go.Scatter(
                x=np.full(n, x),
                y=ys,
                mode="markers+text",
                text=[f"<b>{lab}</b>" if j == focus else lab for j, lab in enumerate(labels)],
                textposition=f"middle {anchor}",
                textfont={"size": theme.sizes.tick},
                marker={"size": 6, "color": theme.colors["muted"]},
                showlegend=False,
                hovertemplate=side + ": %{text}<extra></extra>",
            )
        )
    update_axes(fig, "x", visible=False, range=[-0.6, 1.6])
    update_axes(fig, "y", visible=False, range=[-n + 0.3 - (sink is not None), 0.8])
    row = 30 if theme.presentation else 22
    return style(fig, theme, title=title, height=max(380, row * n + 160), legend=True)


SINK_TARGET = "⟨learned sink⟩"


LINE_FLOOR = 0.01  # the head view sends every line at least this heavy (its slider's lowest setting)
# a line's weight travels as a 16-bit integer, rounded down to steps of 1/60,000: a multiple of 0.01 (the slider's
# step) is a whole number of steps, so "weight ≥ threshold" reads the same on the integers as on the weights
WEIGHT_STEPS = 60000


def sparse_lines(weights: np.ndarray, floor: float = LINE_FLOOR) -> dict:
    """Every line of a head at least ``floor`` heavy, packed for the browser: per query, how many lines it has
    (uint16), then each line's key (uint16) and weight (uint16, in ``WEIGHT_STEPS`` steps of 0..1), row by row,
    each array little-endian and base64-encoded. 512 tokens × 12 heads of MiniLM at 0.01: about 0.6 MB, against
    5 MB of JSON lists.

    weights: (N, K), K ≤ 65,535. Returns {"lines", "floor", "rows", "k", "w"} (decode with :func:`unpack_lines`)."""
    w = np.asarray(weights, dtype=np.float32)
    if max(w.shape) > 65535:
        raise ValueError(f"the head view packs token indices in 16 bits; {w.shape} is too large")
    rows, cols = np.nonzero(w >= floor)  # row-major: each query's lines together, queries in order
    counts = np.bincount(rows, minlength=w.shape[0]).astype("<u2")  # (N,)
    steps = np.floor(w[rows, cols].astype(np.float64) * WEIGHT_STEPS).astype("<u2")  # (L,): exact products
    pack = lambda a: base64.b64encode(a.tobytes()).decode("ascii")  # noqa: E731
    return {"lines": len(rows), "floor": float(floor), "rows": pack(counts), "k": pack(cols.astype("<u2")),
            "w": pack(steps)}  # fmt: skip


def unpack_lines(head: dict) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The (query, key, weight) arrays of a head packed by :func:`sparse_lines` (as the browser decodes them)."""
    counts = np.frombuffer(base64.b64decode(head["rows"]), dtype="<u2")
    keys = np.frombuffer(base64.b64decode(head["k"]), dtype="<u2").astype(int)
    weights = np.frombuffer(base64.b64decode(head["w"]), dtype="<u2") / WEIGHT_STEPS
    return np.repeat(np.arange(len(counts)), counts), keys, weights


def _sink_lines(fig, sink: np.ndarray, ys: np.ndarray, threshold: float, top: float, names, theme: Theme) -> None:
    """Each head's rows to the learned sink (H, N): dashed, faded, to a target of its own below the keys."""
    target = float(ys[-1] - 1) if len(ys) else -1.0
    for i in range(sink.shape[0]):
        rows = np.flatnonzero(sink[i] >= max(threshold, 1e-12))
        for q in rows:
            fig.add_trace(
                go.Scatter(
                    x=[0.0, 1.0], y=[ys[q], target], mode="lines", hoverinfo="skip", showlegend=False,
                    line={"color": HEAD_COLOURS[i % len(HEAD_COLOURS)], "width": 2 * theme.line_scale, "dash": "dash"},
                    opacity=0.6 * (0.15 + 0.85 * float(sink[i, q]) / max(top, 1e-12)), legendgroup=str(names[i]),
                )
            )  # fmt: skip
    fig.add_trace(
        go.Scatter(
            x=[1.0], y=[target], mode="markers+text", text=[f"<i>{SINK_TARGET}</i>"], textposition="middle right",
            textfont={"size": theme.sizes.tick, "color": theme.colors["muted"]}, showlegend=False,
            marker={"size": 6, "color": theme.colors["muted"]}, hovertemplate="a learned sink: no token<extra></extra>",
        )
    )  # fmt: skip


def head_view_data(
    patterns, tokens, heads, threshold: float, theme: Theme, query: int = -1, key: int = -1, sink=None, keys=None
) -> dict:
    """What the interactive head view (viz/shell/components/head_view.js) draws: the tokens, each offered head's
    strongest lines and colour, the threshold, the focus and the sizes. patterns: (H, N, N); ``sink`` (H, N): a
    learned sink's share of each row (gpt-oss), drawn as one more, faded target below the keys (key index N).
    ``keys``: the key side's own S tokens (cross-attention: the target's queries on the source's keys, patterns
    (H, N, S)); the key side then takes no focus, which names a token of the text."""
    if sink is not None:
        patterns = np.concatenate([np.asarray(patterns), np.asarray(sink)[..., None]], axis=-1)  # (H, N, N + 1)
    return {
        "tokens": [str(t) for t in tokens],
        "heads": [
            {
                "label": f"head {h}",
                "colour": HEAD_COLOURS[h % len(HEAD_COLOURS)],
                "text": text_on(HEAD_COLOURS[h % len(HEAD_COLOURS)]),  # a chip's label, ≥ 4.5:1 on its colour
                **sparse_lines(patterns[h]),
            }
            for h in heads
        ],
        "threshold": float(threshold),
        "floor": LINE_FLOOR,
        "query": int(query),
        "key": int(key),
        "rowHeight": 28 if theme.presentation else 20,
        "fontSize": theme.sizes.tick + 1,
        "lineWidth": 2.0 * theme.line_scale,
        "maxHeight": 680,
        "dark": theme.dark,
        "sinkLabel": SINK_TARGET if sink is not None else "",
        "keyTokens": None if keys is None else [str(t) for t in keys],
    }
