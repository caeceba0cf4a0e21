"""Offline interactive HTML: plotly.js from the vendored cartesian bundle, nothing fetched from a CDN;
titles and captions escaped.

A single figure's file embeds the library (1.5 MB) so it opens anywhere; an export pack ships the library once
(``figures/plotly.js``) and every HTML file in it references that file.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from functools import cache
from pathlib import Path

import plotly.graph_objects as go

LIBRARY = Path(__file__).resolve().parents[2] / "assets" / "vendor" / "plotly-cartesian.min.js"
LIBRARY_NAME = "plotly.js"  # the library's file name inside an export pack
#: trace types the cartesian bundle draws (its README); a figure with another type needs the full bundle
TRACE_TYPES = frozenset(
    {"bar", "box", "contour", "heatmap", "histogram", "histogram2d", "histogram2dcontour", "image", "pie"}
    | {"scatter", "scatterternary", "violin"}
)


#: what an exported page may load: its own inline script, styles and data: pictures — nothing from anywhere else
#: (a figure read back from a hostile file cannot make it call out); a pack's pages also their plotly.js beside them
CSP = (
    "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; "
    "img-src data: blob:; font-src data:; connect-src 'none'; base-uri 'none'; form-action 'none'"
)


def csp_meta(beside: bool = False) -> str:
    """The Content-Security-Policy as a meta tag; ``beside``: also the pack's own plotly.js next to the page."""
    policy = CSP.replace("script-src 'unsafe-inline'", "script-src 'unsafe-inline' 'self'") if beside else CSP
    return f"<meta http-equiv='Content-Security-Policy' content=\"{policy}\">"


@cache
def library() -> str:
    """The plotly.js bundle's source (read once)."""
    return LIBRARY.read_text(encoding="utf-8")


def _script(embed: bool) -> str:
    if embed:
        return f"<script type='text/javascript'>{library()}</script>"
    return f"<script type='text/javascript' src='{LIBRARY_NAME}'></script>"


def figure_html(
    fig: go.Figure, title: str = "Attention Lab figure", *, embed: bool = True, caption: str = "", source: str = ""
) -> str:
    """One interactive HTML file with its caption and provenance line (``source``) under the figure;
    ``embed=False`` references ``plotly.js`` beside it (inside a pack)."""
    return page_html([(title, fig, caption)], title=title, caption=source, embed=embed)


def page_html(figures: Sequence[tuple], *, title: str, caption: str = "", embed: bool = True) -> str:
    """Every figure of a page in one HTML file: (name, figure) or (name, figure, its caption) each. Titles and
    captions are escaped."""
    unsupported = {t.type for _, fig, *_ in figures for t in fig.data} - TRACE_TYPES
    if unsupported:
        raise ValueError(f"trace types {sorted(unsupported)} are not in the offline plotly.js bundle")
    parts = []
    for name, fig, *said in figures:
        div = fig.to_html(full_html=False, include_plotlyjs=False, config={"displaylogo": False})
        note = f"<p>{html.escape(said[0])}</p>" if said and said[0] else ""
        parts.append(f"<section><h2>{html.escape(name)}</h2>{div}{note}</section>")
    return (
        f"<!DOCTYPE html><html><head><meta charset='utf-8'>{csp_meta(beside=not embed)}"
        f"<title>{html.escape(title)}</title>"
        "<style>body{font-family:sans-serif;margin:24px;max-width:1500px} h2{font-size:1.1em}</style>"
        f"{_script(embed)}</head><body>"
        f"<h1>{html.escape(title)}</h1><p>{html.escape(caption)}</p>{''.join(parts)}</body></html>"
    )
