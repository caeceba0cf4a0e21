"""Attention map: one head as a heatmap (weights or raw scores), all heads of its layer, the mean."""

import streamlit as st

from viz.figures.heatmaps import CLICK_MAX
from viz.settings import ATTENTION_MODES
from viz.shell.components import token_strip
from viz.shell.context import page_context
from viz.shell.longrun import WHOLE, focus_picker, long_observation, reads_whole, window_picker
from viz.shell.services import views
from viz.shell.widgets import (
    follow_open_page,
    layer_head_picker,
    open_clicked,
    open_page,
    show_focusable,
    show_view,
    unavailable,
)
from viz.views import ViewUnavailableError

follow_open_page()
ctx = page_context()
obs = ctx.obs
whole = reads_whole(ctx)
st.title("Attention map", help=f"Marked “{WHOLE}”: on a long text this page reads every token." if whole else None)
long = long_observation(ctx, layer=int(st.session_state["layer"])) if whole else None  # once its layer is read
st.page_link(
    "viz/pages/start.py",
    label="New here? Start here: what rows, columns and colours mean",
    icon=":material/waving_hand:",
)
st.caption(
    "Rows are queries (the token that looks), columns are keys (the tokens it looks at); each row sums to 1. "
    + (
        f"All {long.n_tokens:,} tokens of the text are drawn; put a query (and a key) in focus by position below."
        if long is not None
        else "Click a cell, or a token below, to put that query (and key) in focus on every page."
        if len(ctx.tokens) <= CLICK_MAX
        else "Click a token below to put it in focus as the query on every page (Shift+click: the key)."
    )
)
strip = st.container()  # filled after the heatmap: the chart does not wait for the component
layer, head = layer_head_picker(obs.n_layers, obs.n_heads)
window = window_picker(long) if long is not None else ()
col1, _ = st.columns([2, 1])
label = col1.radio(
    "Show",
    ATTENTION_MODES,
    horizontal=True,
    key="attn_mode",
    help="Scores are what goes into the softmax; masked cells are −∞ and drawn grey.",
)
mode = "scores" if label == ATTENTION_MODES[1] else "weights"
without = (
    mode == "weights"
    and long is None
    and col1.toggle(
        "Renormalise without the sink",
        key="attn_without_sink",
        help="Removes the weight on [CLS], [SEP] (and on position 0 in a causal model) and rescales each row to "
        "sum to 1: where the rest of the attention goes. A view, not what the model computes.",
    )
)
focus = {"query": st.session_state["focus_query"], "key": st.session_state["focus_key"]}
place = {"span": window, "cells": st.session_state["attn_cells"]} if long is not None else {}
try:
    (main,) = views(ctx, "attention", layer=layer, head=head, mode=mode, without_sink=bool(without), **focus, **place)
except ViewUnavailableError as exc:
    unavailable(exc)
    (main,) = views(ctx, "attention", layer=layer, head=head, **focus)
show_focusable(main, "attn_main")


def open_circuits() -> None:
    st.session_state["causes_section"] = "Circuits"
    open_page("viz/pages/causes.py")


st.button(
    f"L{layer}H{head}'s QK and OV circuits", key="attn_circuits", on_click=open_circuits, icon=":material/science:"
)
with strip:
    if long is None:
        token_strip(ctx.tokens, obs.special[ctx.keep])
    else:
        focus_picker(long)
if ctx.hide_special:
    st.caption("Special tokens are hidden: rows no longer sum to 1 (the hidden columns' share is not shown).")
st.subheader(f"All heads of layer {layer}")
st.caption("One colour scale for every head, so their strengths can be compared.")
(grid,) = views(ctx, "heads", layer=layer)
show_view(grid, "attn_grid")
st.subheader(f"Mean over the heads of layer {layer}")
(mean,) = views(ctx, "mean", layer=layer, **focus)
show_focusable(mean, "attn_mean")
if obs.cross is not None and long is None:  # an encoder–decoder's decoder: its second attention reads the source
    st.subheader(f"Cross-attention of layer {layer}, head {head}: the target reading the source")
    st.caption(
        "The decoder's second attention in every block: its queries are the target's tokens, its keys and values "
        "the encoder's output over the source (chosen in the sidebar). Above is its own, causal self-attention."
    )
    (cross,) = views(ctx, "cross", layer=layer, head=head)
    show_view(cross, "attn_cross")
    (every,) = views(ctx, "cross_overview", layer=layer, head=head)
    show_view(every, "attn_cross_overview", on_select=lambda: open_clicked("attn_cross_overview"),
              selection_mode="points")  # fmt: skip
