"""Attention map: one head as a heatmap (weights or raw scores), all heads of its layer, the mean."""

import streamlit as st

from viz.settings import ATTENTION_MODES
from viz.shell.context import page_context
from viz.shell.widgets import layer_head_picker, show_view
from viz.views import build

ctx = page_context()
obs = ctx.obs
st.title("Attention map")
layer, head = layer_head_picker(obs.n_layers, obs.n_heads)
col1, _ = st.columns([2, 1])
label = col1.radio(
    "Show",
    ATTENTION_MODES,
    horizontal=True,
    key="attn_mode",
    help="Scores are what goes into the softmax; masked cells are −∞ and drawn grey.",
)
mode = "scores" if label == ATTENTION_MODES[1] and obs.scores is not None else "weights"
(main,) = build("attention", ctx.source, ctx.theme, layer=layer, head=head, mode=mode)
show_view(main, "attn_main")
if ctx.hide_special:
    st.caption("Special tokens are hidden: rows no longer sum to 1 (the hidden columns' share is not shown).")
st.subheader(f"All heads of layer {layer}")
st.caption("One colour scale for every head, so their strengths can be compared.")
(grid,) = build("heads", ctx.source, ctx.theme, layer=layer)
show_view(grid, "attn_grid")
st.subheader(f"Mean over the heads of layer {layer}")
(mean,) = build("mean", ctx.source, ctx.theme, layer=layer)
show_view(mean, "attn_mean")
