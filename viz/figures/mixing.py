"""Figures for what goes beyond raw weights: a head-type grid, and agreement between methods."""

from __future__ import annotations

import itertools

import numpy as np
import plotly.graph_objects as go

from viz.figures.common import Theme, as_array, check_labels, downsample, set_export_width, style
from viz.figures.heatmaps import add_cell_targets
from viz.figures.layout import figure, update_axes
from viz.figures.text import thinned, tick_budget, token_labels

MAX_COLUMNS = 256  # method rows over longer texts are drawn as block means

#: one colour per head type (the order of model.analysis.sinks.HEAD_TYPES), readable with dark text
TYPE_COLORS = (
    "#8ecae6",
    "#219ebc",
    "#b5e48c",
    "#ffb703",
    "#fb8500",
    "#e5989b",
    "#cdb4db",
    "#90be6d",
    "#e9ecef",
    "#adb5bd",
    "#ffc9c9",
)


SHORT = {"previous": "prev", "[CLS]": "CLS", "[SEP]": "SEP", "punctuation": "punct", "position 0": "pos 0",
         "positional": "offset"}  # fmt: skip


def type_grid(labels, types: tuple[str, ...], *, title: str | None = None, theme: Theme | None = None) -> go.Figure:
    """Layers × heads, each cell coloured by its head type and labelled with it; a click reports (layer, head).

    labels: (L, H) strings, each one of ``types``."""
    lab = np.asarray(labels, dtype=object)
    if lab.ndim != 2:
        raise ValueError(f"labels must be (layers, heads), got shape {lab.shape}")
    unknown = set(lab.ravel()) - set(types)
    if unknown:
        raise ValueError(f"unknown head types {sorted(unknown)}")
    theme = theme or Theme()
    L, H = lab.shape
    index = np.vectorize(types.index)(lab).astype(float)  # (L, H)
    k = len(types)
    scale = [[v, TYPE_COLORS[i % len(TYPE_COLORS)]] for i in range(k) for v in (i / k, (i + 1) / k)]
    x, y = [f"H{h}" for h in range(H)], [f"L{i}" for i in range(L)]
    short = np.vectorize(lambda s: SHORT.get(s, s))(lab)
    fig = figure(
        go.Heatmap(
            z=index,
            x=x,
            y=y,
            zmin=0,
            zmax=k,
            colorscale=scale,
            showscale=False,
            text=short,
            texttemplate="%{text}" if H <= 16 else "",
            textfont={"size": theme.sizes.tick - 1, "color": "#111111"},
            customdata=lab,
            hovertemplate="layer %{y}, head %{x}: %{customdata}<extra></extra>",
        )
    )
    if theme.interactive:
        ids = np.stack(np.meshgrid(np.arange(L), np.arange(H), indexing="ij"), axis=-1)
        add_cell_targets(fig, x, y, index, ids, "type", size=12, where="layer %{y}, head %{x}")
    height = max(360, min(900, (34 if theme.presentation else 26) * L + 200))
    update_axes(fig, "y", autorange="reversed", type="category", title={"text": "layer"})
    update_axes(fig, "x", type="category", title={"text": "head"}, side="bottom")
    cell = max(56, int(4.2 * theme.sizes.tick))  # wide enough for a five-letter label
    return style(set_export_width(fig, max(800, cell * H + 220)), theme, title=title, height=height)


def agreement_matrix(rho, methods: list[str], *, title: str | None = None, theme: Theme | None = None) -> go.Figure:
    """Spearman's ρ between methods (K, K), −1 … 1 on a diverging scale, each value written in its cell."""
    r = as_array("rho", rho, 2).astype(np.float32)
    if r.shape != (len(methods), len(methods)):
        raise ValueError(f"rho is {r.shape} for {len(methods)} methods")
    theme = theme or Theme()
    fig = figure(
        go.Heatmap(
            z=r,
            x=methods,
            y=methods,
            zmin=-1,
            zmax=1,
            colorscale=theme.diverging,
            text=np.round(r, 2),
            texttemplate="%{text:.2f}",
            textfont={"size": theme.sizes.tick},
            colorbar={"title": {"text": "ρ"}},
            hovertemplate="%{y} vs %{x}: ρ = %{z:.2f}<extra></extra>",
        )
    )
    update_axes(fig, "y", autorange="reversed", type="category")
    update_axes(fig, "x", type="category", tickangle=-30)
    height = max(420, (34 if theme.presentation else 28) * len(methods) + 260)
    return style(fig, theme, title=title, height=height)


def method_rows(
    matrix, methods: list[str], tokens, *, title: str | None = None, theme: Theme | None = None
) -> go.Figure:
    """One row per method, one column per input token: matrix (K, N) of shares in [0, 1]; the token labels are
    thinned to what the figure's width can hold (every one for short texts); beyond MAX_COLUMNS tokens the
    columns are block means."""
    m = as_array("matrix", matrix, 2).astype(np.float32)
    if m.shape[0] != len(methods):
        raise ValueError(f"{len(methods)} method names for {m.shape[0]} rows")
    theme = theme or Theme()
    x = token_labels(check_labels("tokens", tokens, m.shape[1]), theme.positions)
    if m.shape[1] > MAX_COLUMNS:
        edges = np.linspace(0, m.shape[1], MAX_COLUMNS + 1).astype(int)  # as downsample cuts them
        x = [f"tokens {a}–{b - 1}" for a, b in itertools.pairwise(edges)]
        m = downsample(m, MAX_COLUMNS)  # the K method rows stay rows
        title = f"{title} (block means)" if title else None
    width = 1400 if theme.presentation else 1200
    fig = figure(
        go.Heatmap(
            z=m,
            x=x,
            y=methods,
            zmin=0,
            zmax=1,
            colorscale=theme.colorscale,
            colorbar={"title": {"text": "share"}},
            hovertemplate="%{y}<br>token: %{x}<br>share: %{z:.3f}<extra></extra>",
        )
    )
    height = max(380, (44 if theme.presentation else 36) * len(methods) + 300)
    update_axes(fig, "y", autorange="reversed", type="category")
    update_axes(fig, "x", type="category", tickangle=-90, **thinned(x, tick_budget(width - 360, theme.sizes.tick)))
    return style(set_export_width(fig, width), theme, title=title, height=height)
