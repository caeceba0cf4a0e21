"""Positional encodings: a table as a heatmap, chosen dimensions as curves, position-to-position similarity."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from viz.figures.common import Theme, as_array, style
from viz.figures.layout import figure, relayout, subplots, update_annotations, update_axes

#: files draw every position up to this many; beyond, block means too (8,192 positions × d would be tens of MB)
EXACT_POSITIONS = 1024


def _screen_blocks(n: int, theme: Theme) -> tuple[np.ndarray, np.ndarray] | None:
    """(block edges, block centres) to average an axis of ``n`` positions on screen (or in a file, beyond
    EXACT_POSITIONS), or None to keep it."""
    cells = theme.max_cells or EXACT_POSITIONS
    if n <= cells:
        return None
    edges = np.linspace(0, n, cells + 1).astype(int)
    return edges, (edges[:-1] + edges[1:] - 1) / 2


def _block_mean(values: np.ndarray, edges: np.ndarray, axis: int) -> np.ndarray:
    return np.add.reduceat(values, edges[:-1], axis=axis) / np.expand_dims(np.diff(edges), 1 - axis)


def encoding_heatmap(
    table,
    *,
    title: str | None = None,
    theme: Theme | None = None,
    x_title: str = "dimension",
    zmax: float | None = None,
    split_pairs: bool = False,
):
    """A positional table: positions down, dimensions across. table: (P, D). ``zmax``: clip the colours at
    ±zmax (a robust scale for tables with outliers; hover keeps the true value). ``split_pairs``: a sinusoidal
    table drawn as two panels, the sines (even dimensions) and the cosines (odd ones), so the wavelength grows
    smoothly from left to right instead of alternating sine/cosine columns striping the picture.

    On screen, long tables are block-averaged over positions (a box filter: fast sinusoids at hundreds of
    positions would otherwise alias into moiré stripes); dimensions are never averaged (neighbouring columns
    are unrelated, e.g. a sine and a cosine). Exports are exact and grow in height so each row keeps ≥ 1.5 px."""
    t = as_array("table", table, 2)
    theme = theme or Theme()
    shape = t.shape
    y = np.arange(t.shape[0])
    rows = _screen_blocks(t.shape[0], theme)
    if rows is not None:
        t, y = _block_mean(t.astype(np.float64), rows[0], 0), rows[1]
    limit = float(zmax) if zmax else None
    dims = np.arange(t.shape[1])
    parts = [(t[:, 0::2], dims[0::2], "sin: dimensions 2i"), (t[:, 1::2], dims[1::2], "cos: dimensions 2i + 1")]
    if not split_pairs:
        parts = [(t, dims, None)]
    fig = subplots(
        rows=1,
        cols=len(parts),
        shared_yaxes=True,
        horizontal_spacing=0.04,
        subplot_titles=[p[2] for p in parts] if split_pairs else None,
    )
    for col, (z, x, _) in enumerate(parts, start=1):
        fig.add_trace(
            go.Heatmap(
                z=z,
                x=x,
                y=y,
                coloraxis="coloraxis",
                hovertemplate=f"position %{{y}}<br>{x_title} %{{x}}<br>value %{{z:.4f}}<extra></extra>",
            ),
            1,
            col,
        )
        update_axes(fig, "x", title={"text": x_title}, row=1, col=col)
    relayout(
        fig,
        coloraxis={
            "colorscale": theme.diverging,
            "cmid": 0 if limit is None else None,
            "cmin": -limit if limit else None,
            "cmax": limit,
            "colorbar": {"title": {"text": f"value (clipped at ±{limit:.3g})" if limit else "value"}},
        },
    )
    update_axes(fig, "y", autorange="reversed")
    update_axes(fig, "y", title={"text": "position"}, row=1, col=1)
    averaged = " (block means)" if rows is not None else ""
    height = int(min(1600, max(480, 200 + 1.5 * t.shape[0])))
    title = f"{title} — shape {shape}{averaged}" if title else None
    fig = style(fig, theme, title=title, height=height, above=1 if split_pairs else 0)
    if split_pairs:
        update_annotations(fig, {"font": {"size": theme.sizes.axis_title, "color": theme.colors["text"]}})
    return fig


def encoding_curves(table, dims, *, title: str | None = None, theme: Theme | None = None) -> go.Figure:
    """Chosen dimensions of a positional table as curves over position. table: (P, D)."""
    t = as_array("table", table, 2)
    theme = theme or Theme()
    fig = figure()
    for d in dims:
        if not 0 <= d < t.shape[1]:
            raise ValueError(f"dimension {d} is outside 0..{t.shape[1] - 1}")
        fig.add_trace(
            go.Scatter(
                y=t[:, d],
                mode="lines",
                name=f"dim {d}",
                line={"width": 2 * theme.line_scale},
                hovertemplate=f"dim {d}<br>position %{{x}}<br>%{{y:.4f}}<extra></extra>",
            )
        )
    update_axes(fig, "x", title={"text": "position"})
    update_axes(fig, "y", title={"text": "value"})
    return style(fig, theme, title=title, height=420, legend=True)


def position_similarity(table, *, title: str | None = None, theme: Theme | None = None) -> go.Figure:
    """Dot products between every pair of position vectors. table: (P, D) -> (P, P) heatmap."""
    t = as_array("table", table, 2).astype(np.float64)
    theme = theme or Theme()
    axis = np.arange(t.shape[0])
    blocks = _screen_blocks(t.shape[0], theme)
    if blocks is not None:  # block means of PE(i)·PE(j) are the dot products of the blocks' mean vectors
        t, axis = _block_mean(t, blocks[0], 0), blocks[1]
        title = f"{title} (block means)" if title else None
    sim = t @ t.T  # (P, P), or (blocks, blocks)
    fig = figure(
        go.Heatmap(
            z=sim,
            x=axis,
            y=axis,
            colorscale=theme.colorscale,
            hovertemplate="position %{y} · position %{x} = %{z:.3f}<extra></extra>",
            colorbar={"title": {"text": "dot product"}},
        )
    )
    update_axes(fig, "y", autorange="reversed", title={"text": "position"})
    update_axes(fig, "x", title={"text": "position"})
    return style(fig, theme, title=title, height=480)


def rope_wavelengths(
    unscaled, scaled, *, original: int = 0, title: str | None = None, theme: Theme | None = None
) -> go.Figure:
    """A scaled RoPE beside the plain one: each rotated pair's wavelength (positions per full turn, 2π / frequency)
    on a log scale, the original context marked. unscaled, scaled: (P,) wavelengths of the P pairs."""
    theme = theme or Theme()
    plain = as_array("unscaled", unscaled, 1)
    real = as_array("scaled", scaled, 1)
    if plain.shape != real.shape:
        raise ValueError(f"unscaled and scaled need the same pairs, got {plain.shape} and {real.shape}")
    pairs = np.arange(plain.size)
    fig = figure()
    lines = ((plain, "unscaled", "dot", "#868e96"), (real, "this model's", "solid", "#3b5bdb"))
    for values, name, dash, color in lines:
        fig.add_trace(
            go.Scatter(
                x=pairs, y=values, mode="lines+markers", name=name, line={"dash": dash, "color": color, "width": 2.5},
                marker={"size": 7, "symbol": "circle" if dash == "solid" else "diamond"},
                hovertemplate=f"pair %{{x}}: {name} wavelength %{{y:,.1f}} positions<extra></extra>",
            )
        )  # fmt: skip
    if original:  # a line in the legend, where a label cannot sit on other lines
        fig.add_trace(go.Scatter(x=[pairs[0], pairs[-1]], y=[original, original], mode="lines",
                                 name=f"original context: {original:,} positions", hoverinfo="skip",
                                 line={"color": "#e8590c", "dash": "dash", "width": 1.5}))  # fmt: skip
    values = np.concatenate([plain, real, [original] if original else []])
    low, high = np.log10(values.min() / 2), np.log10(values.max() * 2)
    step = max(1, plain.size // 16)  # whole pairs only
    update_axes(fig, "x", title={"text": "rotated pair (fast → slow)"}, tickmode="linear", dtick=step)
    update_axes(fig, "y", type="log", title={"text": "wavelength (positions per turn)"}, range=[low, high],
                tickformat=",.0f", dtick=1)  # fmt: skip
    relayout(fig, legend={"orientation": "h", "y": -0.25, "x": 0})
    return style(fig, theme, title=title, height=420)
