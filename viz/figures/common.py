"""Shared helpers for the figure builders: validation, token labels, tick thinning, themes, export options.

Every figure is laid out to survive export: axes and the title push the margins to fit their labels
(plotly's automargin), tick labels are thinned to what the axis can show, and font sizes come from one
:class:`Theme` so that the presentation theme scales ticks, axis titles, hover text and colour bars together.
"""

from __future__ import annotations

import itertools

import numpy as np
import plotly.graph_objects as go

from viz.figures.layout import held, prop, relayout
from viz.figures.margins import prefit
from viz.figures.slidefit import fit_slide_axes
from viz.figures.text import (
    CHAR_EM,
    MAX_TICKS,
    ZW,
    fit_title,
    keep_shown,
    thinned,
    tick_budget,
    token_labels,
    unique_labels,
    wrap,
)
from viz.figures.theme import COLORBLIND_SCALES, DEFAULT_THEME, LABEL_POSITIONS, Sizes, Theme

__all__ = [
    "CHAR_EM",
    "COLORBLIND_SCALES",
    "DEFAULT_THEME",
    "LABEL_POSITIONS",
    "MAX_TICKS",
    "ZW",
    "Sizes",
    "Theme",
    "fit_title",
    "thinned",
    "tick_budget",
    "token_labels",
    "unique_labels",
    "wrap",
]


def as_array(name: str, value, ndim: int) -> np.ndarray:
    arr = np.asarray(value)
    if arr.ndim != ndim:
        raise ValueError(f"{name} must have {ndim} dimensions, got shape {arr.shape}")
    return arr


def check_labels(name: str, labels, n: int) -> list[str]:
    labels = [t if isinstance(t, str) else str(t) for t in labels]  # a Placed token keeps its position
    if len(labels) != n:
        raise ValueError(f"{name} has {len(labels)} labels but the array has {n} positions")
    return labels


def title_block_px(fig: go.Figure, theme: Theme) -> int:
    """Height of the title and subtitle as plotly lays them out: the top pad, the title line, and the
    subtitle's lines below a gap of about one subtitle line."""
    text = prop(fig, "title", "text")
    lines = 1 + text.count("<br>") if text else 0
    pad = prop(fig, "title", "pad", "t") or 10
    size = prop(fig, "title", "font", "size", default=theme.sizes.title)
    block = pad + (1.3 * size if lines == 1 else 0) if text else 10
    sub = prop(fig, "title", "subtitle", "text")
    if sub:
        block += 1.3 * theme.sizes.axis_title * (sub.count("<br>") + 2)
    return int(block)


def style(
    fig: go.Figure,
    theme: Theme | None = None,
    *,
    title: str | None = None,
    subtitle: str | None = None,
    height: int | None = None,
    legend: bool | None = None,
    above: int = 0,
) -> go.Figure:
    """Apply the theme (colours, fonts, margins that fit the labels) and the title in one layout update.

    One layout assignment (:func:`viz.figures.layout.relayout`): plotly's ``update_layout`` machinery was most of
    a figure's cost.
    The title (and its subtitle) sits at the top of the image, wrapped to its width, and pushes the plot down
    (automargin); ``above`` lines of subplot titles get room between the title and the plot. Legends go below
    the plot so they never cover the title.
    """
    theme = theme or DEFAULT_THEME
    colors, sizes = theme.colors, theme.sizes
    axis = {
        "gridcolor": colors["grid"],
        "zerolinecolor": colors["grid"],
        "linecolor": colors["grid"],
        "automargin": True,
        "tickfont": {"size": sizes.tick, "color": colors["text"]},
        "title": {"font": {"size": sizes.axis_title, "color": colors["text"]}, "standoff": 8},
    }
    if theme.box:  # a slide: the figure fills the box, whatever size it takes on screen
        width, height = theme.box
    else:
        width = _meta(fig).get("width") or (export_size(fig)[0] if height is None else _screen_width(height))
    text_px = width - 36
    title_text, title_size = fit_title(title, text_px, sizes, shrink=not theme.box) if title else (None, sizes.title)
    extra = title_text.count("<br>") if title_text else 0  # plotly anchors a title's last line at the top
    layout = {
        "template": "none",
        "paper_bgcolor": colors["bg"],
        "plot_bgcolor": colors["bg"],
        "font": {"size": sizes.base, "color": colors["text"], "family": "DejaVu Sans, Arial, Helvetica, sans-serif"},
        "hoverlabel": {"font": {"size": sizes.hover}},
        "title": {
            "text": title_text,
            "x": 0.0,
            "xanchor": "left",
            "xref": "container",
            "y": 1.0,
            "yanchor": "top",
            "yref": "container",
            # plotly puts a wrapped title's last line where a one-line title's top would be: pad it down by
            # every line (1.2 em each, measured in chromium) so that the first line starts 10 px from the top
            "pad": {"t": 14 + int(1.2 * title_size * (extra + 1)) if extra else 10, "l": 12},
            "automargin": True,
            "font": {"size": title_size, "color": colors["text"]},
            "subtitle": {
                "text": wrap(subtitle, text_px, sizes.axis_title) if subtitle else None,
                "font": {"size": sizes.axis_title, "color": colors["muted"]},
            },
        },
        "margin": {"l": 12, "r": 12, "t": 16, "b": 12, "pad": 0},
    }
    if legend is not None:
        layout["showlegend"] = legend
    if legend:
        layout["legend"] = {
            "orientation": "h",
            "x": 0.0,
            "xanchor": "left",
            "y": 0.0,
            "yanchor": "bottom",
            "yref": "container",
            "font": {"size": sizes.base, "color": colors["text"]},
        }
        layout["margin"]["b"] = int(2.4 * sizes.base)
    if height:
        layout["height"] = height
    if theme.box:
        layout["width"] = width
    if prop(fig, "yaxis", "title", "text"):  # room for a y title beside numeric ticks (automargin only adds to it)
        layout["margin"]["l"] = int(1.6 * sizes.axis_title + 5 * CHAR_EM * sizes.tick + 16)
    if above:
        layout["meta"] = {**_meta(fig), "above": above}
    relayout(fig, layout, axes=axis)
    if above:
        reserve_top(fig, theme)
    if theme.box:  # a slide: no axis keeps more labels than its length holds at 18 pt
        fit_slide_axes(fig, theme)
    return prefit(fig)


def _meta(fig: go.Figure) -> dict:
    """Layout hints this module keeps in ``layout.meta``: "above" (subplot-title lines), "width" (export px)."""
    meta = prop(fig, "meta")
    return dict(meta) if isinstance(meta, dict) else {}


def set_export_width(fig: go.Figure, width: int) -> go.Figure:
    """Export this figure ``width`` px wide (e.g. several panels side by side); on screen it still fills the
    page's width. Call before :func:`style`, which fits the title to it."""
    return relayout(fig, meta={**_meta(fig), "width": int(width)})


def boxed(theme: Theme, height: int, width: int | None = None) -> tuple[int, int]:
    """(width, height) a builder lays its axes out for: the slide's box when the theme has one, else its own
    (``width`` None: the width the figure takes for that height)."""
    if theme.box:
        return theme.box
    return (width or _screen_width(height)), height


def _screen_width(height: int) -> int:
    return int(max(800, min(1500, height * 1.35)))


def reserve_top(fig: go.Figure, theme: Theme) -> None:
    """Room between the title block and the plot for lines of subplot titles (annotations do not push
    margins by themselves)."""
    above = _meta(fig).get("above", 0)
    if above or prop(fig, "title", "subtitle", "text"):  # plotly's title automargin leaves the subtitle out
        top_ticks = 1.6 * theme.sizes.tick if prop(fig, "xaxis", "side") == "top" else 0  # labels above the plot
        margin = title_block_px(fig, theme) + int(1.4 * theme.sizes.axis_title * above + top_ticks) + 8
        relayout(fig, margin={"t": margin})


def safe_filename(*parts: object, limit: int = 150) -> str:
    text = "_".join(str(p) for p in parts if p not in (None, ""))
    return "".join(c if c.isalnum() or c in "-_" else "-" for c in text)[:limit] or "figure"


#: export sizes: "screen" keeps the figure's own size, "slide" is a 16:9 slide at 1×
EXPORT_SIZES = {"screen": None, "slide": (1920, 1080)}


def export_size(fig: go.Figure, size: str = "screen") -> tuple[int, int]:
    """(width, height) in px of an exported image: the slide size, or the figure's height and a width that
    keeps heatmaps near square (what a wide screen shows)."""
    if size not in EXPORT_SIZES:
        raise ValueError(f"size must be one of {', '.join(EXPORT_SIZES)}")
    if EXPORT_SIZES[size] is not None:
        return EXPORT_SIZES[size]
    height = int(prop(fig, "height") or 600)
    return int(prop(fig, "width") or _meta(fig).get("width") or _screen_width(height)), height


def plotly_config(filename: str, *, scale: int = 3, size: str = "screen") -> dict:
    """Modebar settings: PNG download with a descriptive filename, at ``scale``x or at the slide size."""
    image = {"format": "png", "filename": safe_filename(filename), "scale": scale}
    if EXPORT_SIZES.get(size):
        width, height = EXPORT_SIZES[size]
        image.update(width=width, height=height, scale=1)
    return {
        "displaylogo": False,
        "toImageButtonOptions": image,
        "modeBarButtonsToAdd": ["toImage"],
        "responsive": True,
    }


def fit_to_screen(matrix: np.ndarray, rows: list[str], cols: list[str] | None, max_cells: int | None):
    """Block-average a (R, C) matrix whose axes are longer than ``max_cells`` (cols None: the columns are
    dimensions, not tokens). −inf cells (masked) stay −inf only where a whole block is masked.

    Returns (matrix, row labels, column labels, row edges or None, column edges or None); labels of averaged
    axes name their token range ("tokens 0–3")."""
    r, c = matrix.shape
    if not max_cells or (r <= max_cells and c <= max_cells):
        return matrix, rows, cols, None, None
    finite = np.isfinite(matrix)
    values = np.where(finite, matrix, 0.0).astype(np.float64)
    row_edges = np.linspace(0, r, min(r, max_cells) + 1).astype(int)
    col_edges = np.linspace(0, c, min(c, max_cells) + 1).astype(int)
    sums = np.add.reduceat(np.add.reduceat(values, row_edges[:-1], axis=0), col_edges[:-1], axis=1)
    counts = np.add.reduceat(np.add.reduceat(finite.astype(np.float64), row_edges[:-1], axis=0), col_edges[:-1], axis=1)
    out = np.where(counts > 0, sums / np.maximum(counts, 1), -np.inf).astype(np.float32)

    return (
        out,
        token_ranges(row_edges),
        (token_ranges(col_edges) if cols is not None else None),
        row_edges,
        (col_edges if cols is not None else None),
    )


def token_ranges(edges) -> list[str]:
    """ "tokens 0–51" for each block between consecutive edges (token positions), "token 7" for a block of one."""
    return [f"tokens {a}–{b - 1}" if b - a > 1 else f"token {a}" for a, b in itertools.pairwise(edges)]


def block_of(position: int, edges: np.ndarray | None) -> int:
    """The block a token position falls in (the position itself when the axis is not averaged; -1 stays)."""
    if position < 0 or edges is None:
        return position
    return int(np.searchsorted(edges, position, side="right") - 1)


def downsample(matrix: np.ndarray, size: int) -> np.ndarray:
    """Block-average the last two axes of (..., N, M) to at most (size, size) (thumbnails, never full size)."""
    n, m = matrix.shape[-2:]
    if n <= size and m <= size:
        return matrix
    rows = np.linspace(0, n, min(n, size) + 1).astype(int)
    cols = np.linspace(0, m, min(m, size) + 1).astype(int)
    row_means = np.add.reduceat(matrix, rows[:-1], axis=-2) / np.diff(rows)[:, None]
    return np.add.reduceat(row_means, cols[:-1], axis=-1) / np.diff(cols)[None, :]


def label_named(fig: go.Figure, tokens: set[str]) -> go.Figure:
    """Make sure thinned category axes label the ``tokens`` a caption names (see :func:`keep_shown`)."""
    if not tokens:
        return fig
    changes = {}
    for name, axis in held(fig).items():
        if not (name.startswith(("xaxis", "yaxis")) and axis.get("tickvals") is not None):
            continue
        letter = name[0]
        ref = letter + name[5:]  # "xaxis2" -> "x2"
        labels: list[str] = []
        for trace in fig.data:
            values = getattr(trace, letter, None)
            bound = (getattr(trace, letter + "axis", None) or letter) == ref and trace.type in ("heatmap", "bar")
            if bound and values is not None and len(values) and isinstance(values[0], str):
                labels = list(values)
                break
        shown = list(axis["tickvals"])
        if not labels or len(shown) >= len(labels):
            continue
        kept = keep_shown(shown, labels, tokens)
        if kept != shown:
            changes[name] = {"tickvals": kept, "ticktext": kept}
    return relayout(fig, changes) if changes else fig


def with_subtitle(fig: go.Figure, text: str, theme: Theme | None = None) -> go.Figure:
    """Set the figure's subtitle, wrapped to the image's width (and HTML-escaped: it quotes the user's text)."""
    theme = theme or DEFAULT_THEME
    relayout(fig, title={"subtitle": {"text": wrap(text, export_size(fig)[0] - 36, theme.sizes.axis_title)}})
    reserve_top(fig, theme)
    return fig
