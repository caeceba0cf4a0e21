"""Margins fitted to a figure's labels on the server, before the browser draws it.

Plotly's automargin draws a figure, measures its tick labels and colour bars, and when they need more room than
the margins give, draws the whole figure again: half of a big heatmap's drawing time in the browser (measured in
chromium: a 512-token attention map 0.37–0.96 s with the second drawing, 0.22–0.28 s without). Here the labels
are measured with DejaVu Sans' advance widths (the first font every figure asks for, viz/figures/glyphs.py) and
the margins widened to fit them first, so the browser draws once. Automargin stays on: where an estimate falls
short (another font, a numeric axis whose ticks plotly chooses) the browser still widens the margin, as before.

The pads below were read off plotly.js 4 in chromium (tests/e2e/test_margins.py checks them): tick labels take
20 px more than their width (upright) or line (flat), an axis title ``standoff`` px and about its font size more;
labels turned upright take 5 px more; a colour bar at x = 1 with 24 px of padding takes 91 px beside its widest
tick label or 60 px beside its title.
"""

from __future__ import annotations

import html
import math
import re
import unicodedata
from functools import lru_cache

import plotly.graph_objects as go

from viz.figures.layout import held, relayout, update_trace

TAGS = re.compile(r"<[^>]+>")
BREAK = re.compile(r"<br\s*/?>", re.IGNORECASE)
LABEL_PAD, UPRIGHT_PAD, LINE = 20, 5, 1.25  # px beside the plot; px more when turned upright; line height in em
BAR_TICKS, BAR_TITLE, BAR_PAD = 91, 60, 24  # a colour bar's width beside its widest tick label / its title, and
# its padding (x = 1, xpad 24: the bar 24 px from the plot, about where plotly's x = 1.02 puts it; each px of
# padding more takes 2 px more)
TITLE_LINE = 1.2  # a title line's height in em, as plotly reserves it
SLACK = 3  # px more than measured: rounding in the browser
NARROW_PLOT = 200  # px: labels that fit side by side on a plot this narrow (a 390-px phone's, less the query labels
# and the colour bar) are laid flat on any screen; the others stand upright everywhere, so none overprint on a phone


@lru_cache(maxsize=1)
def _widths() -> dict[str, float]:
    from viz.figures.glyphs import RANGES

    return {chr(start + i): w for start, widths in RANGES for i, w in enumerate(widths)}


def text_width(text: str, size: float) -> float:
    """Width in px of ``text`` (plotly's HTML subset: tags dropped, entities read, the widest line of several)
    at font ``size``: DejaVu Sans' widths; a character it lacks counts 1 em (CJK, emoji: the widest)."""
    widths = _widths()
    best = 0.0
    for line in BREAK.split(str(text)):
        em = 0.0
        for ch in html.unescape(TAGS.sub("", line)):
            if ch in widths:
                em += widths[ch]
            elif unicodedata.category(ch) not in ("Mn", "Me", "Cf"):  # combining marks and zero-width: nothing
                em += 1.0
        best = max(best, em)
    return best * size


def _get(obj, *path, default=None):
    for key in path:
        if obj is None:
            return default
        obj = obj.get(key) if isinstance(obj, dict) else getattr(obj, key, None)
    return default if obj is None else obj


def _labels(fig: go.Figure, layout: dict, key: str) -> list[str] | None:
    """The tick labels an axis will show when they are known here (an array of labels, or categories), else
    None (numbers whose ticks plotly chooses)."""
    axis = layout.get(key) or {}
    if axis.get("showticklabels") is False:
        return []
    if axis.get("ticktext") is not None:
        return [str(t) for t in axis["ticktext"]]
    if axis.get("tickvals") is not None and axis.get("type") == "category":
        return [str(t) for t in axis["tickvals"]]
    letter, suffix = key[0], key[5:]
    ref = letter + suffix
    values = []
    for trace in fig.data:
        if (getattr(trace, f"{letter}axis", None) or letter) != ref:
            continue
        data = getattr(trace, letter, None)
        if data is None:
            continue
        values.extend(data)
    if values and (axis.get("type") == "category" or all(isinstance(v, str) for v in values)):
        return [str(v) for v in dict.fromkeys(values)]
    return None


def _title_room(axis: dict, base: float) -> float:
    text = _get(axis, "title", "text")
    if not text:
        return 0.0
    return _get(axis, "title", "standoff", default=8) + _get(axis, "title", "font", "size", default=base)


def _measured(fig: go.Figure, layout: dict, letter: str, base: float):
    """(axis key, axis, labels, tick font size, widest label in px) of a single-panel figure's x or y axis on its
    default side (bottom, left) when its labels are known here, else None."""
    key = f"{letter}axis"
    axis = layout.get(key) or {}
    if axis.get("side", "left" if letter == "y" else "bottom") not in ("left", "bottom"):
        return None
    labels = _labels(fig, layout, key)
    if labels is None:
        return None
    size = _get(axis, "tickfont", "size", default=base)
    return key, axis, labels, size, max((text_width(t, size) for t in labels), default=0)


def _colorbar_room(bar: dict, base: float, values: tuple[float, float] | None) -> float:
    ticks = _get(bar, "tickfont", "size", default=base)
    title = _get(bar, "title", "text")
    title_px = text_width(title, _get(bar, "title", "font", "size", default=round(base * 1.2))) if title else 0
    tick_px = max((text_width(t, ticks) for t in _tick_texts(values)), default=0)
    pad = 2 * (_get(bar, "xpad", default=BAR_PAD) - BAR_PAD)
    return max(tick_px + BAR_TICKS, title_px + BAR_TITLE if title else 0) + pad


def _tick_texts(values: tuple[float, float] | None) -> list[str]:
    """Tick labels plotly may give a colour bar over [lo, hi]: for every step from 1/3 to 1/12 of the range
    (1, 2 or 5 × 10^k), the ends' labels with that step's decimals (the widest of them is what counts)."""
    if values is None:
        return ["−0.0000"]  # unknown range: as wide as any label a weight or score gets
    lo, hi = values
    span = hi - lo
    if not (math.isfinite(span) and span > 0):
        return [f"{lo:g}"]
    out = []
    for k in range(math.floor(math.log10(span / 12)) - 1, math.floor(math.log10(span / 3)) + 1):
        for m in (1, 2, 5):
            step = m * 10.0**k
            if not span / 12 <= step <= span / 3:
                continue
            decimals = max(0, -math.floor(math.log10(step) + 1e-9))
            for v in (math.floor(lo / step) * step, math.ceil(hi / step) * step, -step if lo < 0 else step):
                out.append(f"{v:.{decimals}f}".replace("-", "−") if abs(v) >= 1e-3 or v == 0 else f"{v * 1e6:.0f}μ")
    return out or [f"{lo:g}", f"{hi:g}"]


def _z_range(trace) -> tuple[float, float] | None:
    lo, hi = getattr(trace, "zmin", None), getattr(trace, "zmax", None)
    if lo is None or hi is None:
        return None
    return float(lo), float(hi)


def prefit(fig: go.Figure) -> go.Figure:
    """Widen the margins to what the left and bottom axes' known tick labels, their titles and default-placed
    colour bars need (see the module's docstring); margins already wider are kept. Figures of several panels
    are left to automargin: their gaps are sized for the margins it gives. Flat labels on the bottom
    edge that would crowd a narrow plot, with no angle set, are turned upright here, where they are measured,
    instead of by the browser."""
    layout = held(fig)
    if any(re.fullmatch(r"[xy]axis\d+", k) for k in layout):  # panels: their gaps are sized with automargin's
        return fig  # margins (viz/figures/grids.py), left to it
    base = _get(layout, "font", "size", default=12)
    margin = dict(layout.get("margin") or {})
    need: dict[str, float] = {}
    axes: dict[str, dict] = {}
    measured = _measured(fig, layout, "y", base)
    if measured is not None:
        _, axis, _, _, widest = measured
        need["l"] = widest + LABEL_PAD + _title_room(axis, base)
    measured = _measured(fig, layout, "x", base)
    if measured is not None:
        key, axis, labels, size, widest = measured
        angle = axis.get("tickangle")
        if angle in (None, "auto") and labels:
            flat = len(labels) * (widest + 6) <= NARROW_PLOT
            if not flat and _labels(fig, layout, "yaxis") is None:  # bars: plotly picks the angle, the margin too
                measured = None
            else:
                angle = 0 if flat else -90  # a map of tokens × tokens: upright when crowded, on every screen
                axes[key] = {"tickangle": angle}
    if measured is not None:
        turn = math.radians(abs(float(angle or 0)))
        tall = widest * math.sin(turn) + LINE * size * math.cos(turn) + (UPRIGHT_PAD if turn else 0)
        need["b"] = (tall if labels else 0) + LABEL_PAD + _title_room(axis, base)
    bars = []
    for trace in fig.data:
        bar = getattr(trace, "colorbar", None)
        if bar is None or getattr(trace, "showscale", None) is False or getattr(trace, "coloraxis", None):
            continue
        if trace.type in ("heatmap", "contour") and bar.x is None:
            bars.append((trace, bar.to_plotly_json(), _z_range(trace)))
    for key in (k for k in layout if re.fullmatch(r"coloraxis\d*", k)):
        bar = _get(layout, key, "colorbar", default={})
        if bar.get("x") is None and _get(layout, key, "showscale", default=True):
            cmin, cmax = _get(layout, key, "cmin"), _get(layout, key, "cmax")
            bars.append((key, bar, None if cmin is None or cmax is None else (float(cmin), float(cmax))))
    for owner, bar, values in bars:
        need["r"] = max(need.get("r", 0), _colorbar_room(bar, base, values))
        if isinstance(owner, str):
            axes[owner] = {"colorbar": {"x": 1.0, "xanchor": "left", "xpad": bar.get("xpad", BAR_PAD)}}
        else:
            update_trace(owner, {"colorbar": {"x": 1.0, "xanchor": "left", "xpad": bar.get("xpad", BAR_PAD)}})
    title = layout.get("title") or {}
    if title.get("text") and title.get("automargin"):  # the title reserves its own room above the pushes
        size = _get(title, "font", "size", default=base * 1.4)
        lines = 1 + str(title["text"]).count("<br>")
        reserved = _get(title, "pad", "t", default=0) + _get(title, "pad", "b", default=0) + lines * TITLE_LINE * size
        top = max(margin.get("t", 0) - SLACK, LINE * 1.2 * _get(layout, "yaxis", "tickfont", "size", default=base))
        need["t"] = top + reserved
    grown = {side: math.ceil(px + SLACK) for side, px in need.items() if px + SLACK > margin.get(side, 0)}
    if grown or axes:
        relayout(fig, **axes, **({"margin": grown} if grown else {}))
    return fig
