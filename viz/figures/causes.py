"""Figures for the research instruments: signed grids (direct logit attribution, patching), the logit lens as a
grid of top tokens, a token's rank through the layers, and a head's QK/OV circuit card."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from viz.figures.common import Theme, as_array, check_labels, style, thinned, tick_budget
from viz.figures.heatmaps import add_cell_targets
from viz.figures.layout import update_axes
from viz.figures.text import CHAR_EM, slide_plot_px

SIGNED = "RdBu"  # reversed: positive red, negative blue, 0 white
UNSIGNED = "Reds"  # a quantity that is never negative (composition scores): white at 0, red at the top


def signed_grid(
    values,
    row_labels: list[str],
    col_labels: list[str],
    *,
    title: str | None = None,
    value_name: str = "value",
    zmax: float | None = None,
    cell_ids=None,
    where: str = "%{y}, %{x}",
    x_title: str = "",
    y_title: str = "",
    theme: Theme | None = None,
    signed: bool = True,
) -> go.Figure:
    """A signed number per cell on a diverging scale centred on 0 (rows top to bottom); ``signed=False``: a number
    that is never negative, on a sequential scale from 0.

    values: (R, C), NaN drawn blank; ``zmax``: the scale's end (default: the largest |value|); ``cell_ids``:
    (R, C, j) what a click on each cell reports (on screen only), e.g. its (layer, head)."""
    v = as_array("values", values, 2).astype(np.float64)
    R, C = v.shape
    rows, cols = check_labels("row_labels", row_labels, R), check_labels("col_labels", col_labels, C)
    theme = theme or Theme()
    finite = np.abs(v[np.isfinite(v)])
    top = float(zmax if zmax is not None else (finite.max() if finite.size and finite.max() > 0 else 1.0))
    heat = go.Heatmap(
        z=v,
        x=cols,
        y=rows,
        colorscale=SIGNED if signed else UNSIGNED,
        reversescale=signed,
        zmin=-top if signed else 0.0,
        zmax=top,
        zmid=0 if signed else None,
        colorbar={"title": {"text": value_name}},
        hovertemplate=f"{where}<br>{value_name}: %{{z:.3f}}<extra></extra>",
    )
    fig = go.Figure(heat, layout={"template": "none"})
    if cell_ids is not None and theme.interactive:
        add_cell_targets(fig, cols, rows, np.nan_to_num(v), cell_ids, value_name, size=12, where=where)
    height = max(360, min(1000, (26 if theme.presentation else 18) * R + 220))
    update_axes(
        fig,
        "y",
        autorange="reversed",
        type="category",
        title={"text": y_title},
        **thinned(rows, tick_budget(height - 220, theme.sizes.tick)),
    )
    update_axes(fig, "x", type="category", title={"text": x_title}, side="bottom", tickangle=-45 if C > 12 else 0)
    return style(fig, theme, title=title, height=height, legend=False)


def lens_grid(
    top_tokens,
    top_probs,
    hover,
    row_labels: list[str],
    col_labels: list[str],
    *,
    title: str | None = None,
    theme: Theme | None = None,
) -> go.Figure:
    """The logit lens: each cell is one layer's likeliest token at one position, coloured by its probability.

    top_tokens: (R, P) strings drawn in the cells; top_probs: (R, P) in [0, 1]; hover: (R, P) the top five."""
    p = as_array("top_probs", top_probs, 2).astype(np.float64)
    R, P = p.shape
    words = np.asarray(top_tokens, dtype=object)
    tips = np.asarray(hover, dtype=object)
    if words.shape != (R, P) or tips.shape != (R, P):
        raise ValueError(f"top_tokens and hover must be {R} × {P} like top_probs")
    rows, cols = check_labels("row_labels", row_labels, R), check_labels("col_labels", col_labels, P)
    theme = theme or Theme()
    height = max(380, min(1100, (28 if theme.presentation else 20) * R + 240))
    # the words in the cells at a size their cells hold (cut to 8 characters; hover names them whole)
    shown = np.vectorize(lambda w: w if len(w) <= 8 else w[:7] + "…", otypes=[object])(words.astype(str))
    font = theme.sizes.tick - 3
    if theme.box:  # a slide: the size its cells hold, none when too small to read
        room_x, room_y = slide_plot_px(theme, cols, rows)
        longest = max((len(w) for w in shown.ravel()), default=1)
        font = min(font, room_x / P / (CHAR_EM * (longest + 1)), room_y / R / 1.4)
    fig = go.Figure(
        go.Heatmap(
            z=p,
            x=cols,
            y=rows,
            text=shown,
            texttemplate="%{text}" if font >= 9 else "",
            textfont={"size": max(9, int(font))},
            customdata=tips,
            colorscale=theme.colorscale,
            zmin=0,
            zmax=1,
            colorbar={"title": {"text": "top-1 probability"}},
            hovertemplate="%{y} · position %{x}<br>%{customdata}<extra></extra>",
        ),
        layout={"template": "none"},
    )
    update_axes(
        fig,
        "y",
        autorange="reversed",
        type="category",
        title={"text": "read after"},
        **thinned(rows, tick_budget(height - 240, theme.sizes.tick)),
    )
    update_axes(fig, "x", type="category", title={"text": "position (its token)"}, side="bottom", tickangle=-45)
    return style(fig, theme, title=title, height=height, legend=False)


def rank_line(ranks, row_labels: list[str], *, token: str, title: str | None = None, theme: Theme | None = None):
    """A token's rank among the vocabulary after each layer (1 = the top guess), on a log axis, best at the top.

    ranks: (R,) integers ≥ 1."""
    r = as_array("ranks", ranks, 1).astype(np.float64)
    rows = check_labels("row_labels", row_labels, len(r))
    theme = theme or Theme()
    fig = go.Figure(
        go.Scatter(
            x=rows,
            y=r,
            mode="lines+markers",
            line={"width": 2 * theme.line_scale},
            name=token,
            hovertemplate="%{x}: rank %{y:,.0f}<extra></extra>",
        ),
        layout={"template": "none"},
    )
    update_axes(fig, "y", type="log", autorange="reversed", dtick=1, title={"text": f"rank of {token}"})  # 1, 10, 100…
    update_axes(
        fig, "x", type="category", title={"text": "read after (emb.: the embeddings; Ln: layer n)"}, **thinned(rows, 16)
    )
    return style(fig, theme, title=title, height=380, legend=False)


def circuit_card(
    qk_singular,
    ov_singular,
    pair_labels: list[str],
    pair_scores,
    *,
    title: str | None = None,
    theme: Theme | None = None,
    pairs_title: str = "OV through the embeddings",
) -> go.Figure:
    """A head's circuits: the singular values of W_Q W_Kᵀ and W_V W_O (largest first, as shares of the first) and
    its strongest OV token pairs through the embeddings (“source → output”), under ``pairs_title``."""
    qk, ov = as_array("qk_singular", qk_singular, 1), as_array("ov_singular", ov_singular, 1)
    scores = as_array("pair_scores", pair_scores, 1)
    labels = check_labels("pair_labels", pair_labels, len(scores))
    theme = theme or Theme()
    fig = make_subplots(
        rows=1,
        cols=3,
        column_widths=[0.28, 0.28, 0.44],
        # the pairs' labels stand left of their bars, in the gap after the OV panel: long labels widen it
        horizontal_spacing=min(0.24, 0.12 + 0.007 * max(0, max((len(t) for t in labels), default=0) - 8)),
        subplot_titles=["QK: where it looks", "OV: what it writes", pairs_title],
    )
    for col, sv in ((1, qk), (2, ov)):
        share = sv / sv[0] if sv.size and sv[0] > 0 else sv
        fig.add_trace(
            go.Bar(
                x=np.arange(1, len(sv) + 1),
                y=share,
                hovertemplate="direction %{x}: %{y:.2f} of the first<extra></extra>",
            ),
            row=1,
            col=col,
        )
    fig.add_trace(
        go.Bar(
            x=scores[::-1],
            y=labels[::-1],
            orientation="h",
            hovertemplate="%{y}: %{x:.2f}<extra></extra>",
        ),
        row=1,
        col=3,
    )
    fig.update_xaxes(title_text="direction (by size)", row=1, col=1)
    fig.update_xaxes(title_text="direction", row=1, col=2)
    fig.update_yaxes(title_text="share of the largest", range=[0, 1.05], row=1, col=1)
    fig.update_yaxes(range=[0, 1.05], row=1, col=2)
    fig.update_xaxes(title_text="logit raised", row=1, col=3)
    fig.update_yaxes(type="category", automargin=True, row=1, col=3)
    return style(fig, theme, title=title, height=460, legend=False, above=1)
