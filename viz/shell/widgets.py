"""Widgets shared by the pages: a chart with its export buttons, layer/head pickers, token chips, CSS."""

from __future__ import annotations

import html

import streamlit as st

from viz.export.offline import figure_html
from viz.export.render import image_export_available, render_image
from viz.figures.common import plotly_config
from viz.views.base import View


def head_label(pair: tuple[int, int]) -> str:
    """(layer, head) -> "L0H1", the label used wherever a list of heads is shown."""
    return f"L{pair[0]}H{pair[1]}"


def show_view(view: View, key: str, *, on_select=None, **kwargs):
    """Render a view exactly as it will be exported (``theme=None``: no Streamlit restyling), with the modebar's
    PNG named after the view, SVG/PNG/HTML download buttons under it (rendered only when clicked, at the
    image size chosen in the sidebar), and register it for the page's export pack. Returns the chart's event."""
    size = st.session_state.get("export_size", "screen")
    name = view.name + ("_slide" if size == "slide" else "")
    st.session_state.setdefault("_page_views", []).append(view)
    kwargs.setdefault("width", "stretch")
    select = {} if on_select is None else {"on_select": on_select}
    event = st.plotly_chart(view.figure, key=key, config=plotly_config(name, size=size), theme=None, **select, **kwargs)
    row = st.container(horizontal=True, gap="small")
    fig = view.figure
    downloads = [("HTML", lambda: figure_html(fig, view.title), "text/html")]
    if image_export_available():
        downloads = [
            ("SVG", lambda: render_image(fig, "svg", size=size), "image/svg+xml"),
            ("PNG", lambda: render_image(fig, "png", size=size), "image/png"),
            *downloads,
        ]
    for label, make, mime in downloads:  # bytes are rendered only when the button is clicked
        row.download_button(
            label,
            make,
            f"{name}.{label.lower()}",
            mime,
            key=f"{key}__{label.lower()}",
            icon=":material/download:",
            type="tertiary",
            on_click="ignore",  # a download needs no rerun of the page
        )
    return event


def show_views(views: list[View], key: str, columns: int = 1) -> None:
    """Several views of one build (e.g. Q, K and V) side by side, ``columns`` to a row."""
    for i in range(0, len(views), columns):
        row = views[i : i + columns]
        for col, item in zip(st.columns(columns) if columns > 1 else [st.container()], row):
            with col:
                show_view(item, f"{key}_{item.key.rsplit('.', 1)[-1]}" if len(views) > 1 else key)


def unavailable(exc: Exception) -> None:
    """Say why a view cannot be drawn here (a ViewUnavailableError's message)."""
    st.info(str(exc))


def layer_head_picker(n_layers: int, n_heads: int, prefix: str = "", *, head: bool = True, label: str = ""):
    """Layer (and head) selectors. Without a prefix they share the global layer/head keys (the head in focus)."""
    lk, hk = (f"{prefix}layer", f"{prefix}head") if prefix else ("layer", "head")
    cols = st.columns(2)
    layer = cols[0].selectbox(f"{label}Layer", range(n_layers), key=lk)
    h = cols[1].selectbox(f"{label}Head", range(n_heads), key=hk) if head else 0
    return int(layer), int(h)


def token_chips(tokens, ids, offsets, special) -> str:
    """HTML chips for tokens (escaped: whatever the user typed renders as text)."""
    chips = []
    for i, (tok, tid, (a, b), sp) in enumerate(zip(tokens, ids, offsets, special)):
        cls = "al-chip al-special" if sp else "al-chip"
        span = "special" if sp else f"chars {a}–{b}"
        chips.append(
            f'<span class="{cls}" title="position {i} · id {tid} · {span}">'
            f"<b>{html.escape(tok)}</b><small>#{i} · id {tid} · {span}</small></span>"
        )
    return '<div class="al-chips">' + "".join(chips) + "</div>"


CHIP_CSS = """
<style>
.al-chips {display: flex; flex-wrap: wrap; gap: 6px; margin: 4px 0 12px 0;}
.al-chip {display: inline-flex; flex-direction: column; padding: 4px 8px; border-radius: 8px;
          background: #e7ecff; border: 1px solid #b9c6ff; color: #1b2559; font-family: monospace;}
.al-chip small {color: #4a5480; font-size: 0.72em;}
.al-special {background: #f1f3f5; border: 1px dashed #adb5bd; color: #495057;}
</style>
"""

PRESENTATION_CSS = """
<style>
.stMainBlockContainer p, .stMainBlockContainer li, .stMainBlockContainer label {font-size: 1.25rem !important;}
.stMainBlockContainer h1 {font-size: 3rem !important;}
.stMainBlockContainer h2, .stMainBlockContainer h3 {font-size: 2rem !important;}
</style>
"""
