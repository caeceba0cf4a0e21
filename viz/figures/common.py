"""Shared helpers for the figure builders: validation, token labels, themes and export options."""

from __future__ import annotations

import html
from dataclasses import dataclass

import numpy as np
import plotly.graph_objects as go

ZW = "\u200b"  # zero-width space: makes repeated tokens distinct categories without changing how they look


@dataclass(frozen=True)
class Theme:
    """How figures look. ``presentation`` means larger fonts and thicker lines for slides."""

    presentation: bool = False
    dark: bool = False
    colorscale: str = "Viridis"  # sequential scale for weights
    diverging: str = "RdBu_r"  # for differences and raw scores

    @property
    def font_size(self) -> int:
        return 18 if self.presentation else 12

    @property
    def line_scale(self) -> float:
        return 2.0 if self.presentation else 1.0

    @property
    def colors(self) -> dict[str, str]:
        """Page, text and grid colours. Set directly: a named plotly template costs ~100 ms per figure."""
        if self.dark:
            return {"bg": "#111418", "text": "#e9ecef", "grid": "#343a40"}
        return {"bg": "#ffffff", "text": "#212529", "grid": "#e9ecef"}


DEFAULT_THEME = Theme()
COLORBLIND_SCALES = ("Viridis", "Cividis", "Magma", "Inferno", "Plasma", "Blues", "Greys")


def as_array(name: str, value, ndim: int) -> np.ndarray:
    arr = np.asarray(value)
    if arr.ndim != ndim:
        raise ValueError(f"{name} must have {ndim} dimensions, got shape {arr.shape}")
    return arr


def check_labels(name: str, labels, n: int) -> list[str]:
    labels = [str(t) for t in labels]
    if len(labels) != n:
        raise ValueError(f"{name} has {len(labels)} labels but the array has {n} positions")
    return labels


def unique_labels(tokens) -> list[str]:
    """Repeated tokens get zero-width suffixes so plotly's categorical axes keep them apart.

    Labels are HTML-escaped: plotly renders tick and hover text as HTML, and a token such as
    ``<script>`` must show as text.
    """
    seen: dict[str, int] = {}
    out = []
    for tok in tokens:
        tok = html.escape(str(tok), quote=False) or " "
        n = seen.get(tok, 0)
        seen[tok] = n + 1
        out.append(tok + ZW * n)
    return out


def style(fig: go.Figure, theme: Theme | None = None, *, title: str | None = None, height: int | None = None):
    """Apply the theme (colours, fonts) and the title in one layout update; returns the same figure.

    One ``update_layout`` call: plotly's per-call validation is the main cost of a figure at 512 tokens.
    """
    theme = theme or DEFAULT_THEME
    colors = theme.colors
    axis = {"gridcolor": colors["grid"], "zerolinecolor": colors["grid"], "linecolor": colors["grid"]}
    layout = {
        "template": "none",
        "paper_bgcolor": colors["bg"],
        "plot_bgcolor": colors["bg"],
        "font": {"size": theme.font_size, "color": colors["text"], "family": "Arial, Helvetica, sans-serif"},
        "hoverlabel": {"font": {"size": theme.font_size}},
        "title": {"text": html.escape(title, quote=False) if title else None, "x": 0.0, "xanchor": "left"},
        "margin": {"l": 10, "r": 10, "t": 60 if title else 20, "b": 10},
    }
    if height:
        layout["height"] = height
    if getattr(fig, "_grid_ref", None) is None:  # one pair of axes: style them in the same call
        layout["xaxis"] = axis
        layout["yaxis"] = axis
        fig.update_layout(layout)
    else:
        fig.update_layout(layout)
        fig.update_xaxes(axis)
        fig.update_yaxes(axis)
    return fig


def safe_filename(*parts: object) -> str:
    text = "_".join(str(p) for p in parts if p not in (None, ""))
    return "".join(c if c.isalnum() or c in "-_" else "-" for c in text)[:120] or "figure"


def plotly_config(filename: str, *, scale: int = 3) -> dict:
    """Modebar settings: PNG download at ``scale``x with a descriptive filename; SVG one click away."""
    return {
        "displaylogo": False,
        "toImageButtonOptions": {"format": "png", "filename": safe_filename(filename), "scale": scale},
        "modeBarButtonsToAdd": ["toImage"],
        "responsive": True,
    }


def downsample(matrix: np.ndarray, size: int) -> np.ndarray:
    """Block-average the last two axes of (..., N, M) to at most (size, size) (thumbnails, never full size)."""
    n, m = matrix.shape[-2:]
    if n <= size and m <= size:
        return matrix
    rows = np.linspace(0, n, min(n, size) + 1).astype(int)
    cols = np.linspace(0, m, min(m, size) + 1).astype(int)
    row_means = np.add.reduceat(matrix, rows[:-1], axis=-2) / np.diff(rows)[:, None]
    return np.add.reduceat(row_means, cols[:-1], axis=-1) / np.diff(cols)[None, :]
