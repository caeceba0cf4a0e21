"""Offline interactive HTML: plotly.js inlined, nothing fetched from a CDN; titles and captions escaped."""

from __future__ import annotations

import html
from collections.abc import Sequence

import plotly.graph_objects as go


def figure_html(fig: go.Figure, title: str = "Attention Lab figure") -> str:
    """One self-contained interactive HTML file (plotly.js inlined: works offline, no CDN)."""
    return page_html([(title, fig)], title=title)


def page_html(figures: Sequence[tuple[str, go.Figure]], *, title: str, caption: str = "") -> str:
    """Every figure of a page in one offline HTML file. Titles and captions are escaped."""
    from plotly.offline import get_plotlyjs

    parts = []
    for name, fig in figures:
        div = fig.to_html(full_html=False, include_plotlyjs=False, config={"displaylogo": False})
        parts.append(f"<section><h2>{html.escape(name)}</h2>{div}</section>")
    return (
        "<!DOCTYPE html><html><head><meta charset='utf-8'>"
        f"<title>{html.escape(title)}</title>"
        "<style>body{font-family:sans-serif;margin:24px;max-width:1400px} h2{font-size:1.1em}</style>"
        f"<script type='text/javascript'>{get_plotlyjs()}</script></head><body>"
        f"<h1>{html.escape(title)}</h1><p>{html.escape(caption)}</p>{''.join(parts)}</body></html>"
    )
