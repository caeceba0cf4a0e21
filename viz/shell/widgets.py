"""Widgets shared by the pages: a chart with its export buttons, layer/head pickers, token chips, CSS."""

from __future__ import annotations

import html

import plotly.graph_objects as go
import streamlit as st

from viz.export.offline import figure_html
from viz.export.render import image_export_available, render_image
from viz.figures.common import plotly_config, safe_filename


def head_label(pair: tuple[int, int]) -> str:
    """(layer, head) -> "L0H1", the label used wherever a list of heads is shown."""
    return f"L{pair[0]}H{pair[1]}"


def show_chart(fig: go.Figure, key: str, *parts: object, on_select=None, **kwargs):
    """Render a figure with the export modebar (PNG at 3x, named after model, page and view), SVG/PNG/HTML
    download buttons under it (rendered only when clicked), and register it for the page's export pack."""
    ctx = st.session_state.get("_ctx")
    name = safe_filename(ctx.model_name if ctx else "attention-lab", *parts)
    st.session_state.setdefault("_page_figures", []).append((name, fig))
    kwargs.setdefault("width", "stretch")
    select = {} if on_select is None else {"on_select": on_select}
    event = st.plotly_chart(fig, key=key, config=plotly_config(name), **select, **kwargs)
    row = st.container(horizontal=True, gap="small")
    downloads = [("HTML", lambda: figure_html(fig, name), "text/html")]
    if image_export_available():
        downloads = [
            ("SVG", lambda: render_image(fig, "svg"), "image/svg+xml"),
            ("PNG", lambda: render_image(fig, "png"), "image/png"),
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
