"""Attention map: one head as a heatmap (weights or raw scores), all heads of its layer, the mean."""

import streamlit as st

from viz.figures import attention_heatmap, heads_grid
from viz.settings import ATTENTION_MODES
from viz.shell.context import page_context
from viz.shell.widgets import layer_head_picker, show_chart

ctx = page_context()
obs = ctx.obs
st.title("Attention map")
layer, head = layer_head_picker(obs.n_layers, obs.n_heads)
col1, _ = st.columns([2, 1])
mode = col1.radio(
    "Show",
    ATTENTION_MODES,
    horizontal=True,
    key="attn_mode",
    help="Scores are what goes into the softmax; masked cells are −∞ and drawn grey.",
)
tokens = ctx.tokens
if mode == ATTENTION_MODES[0] or obs.scores is None:
    fig = attention_heatmap(
        ctx.pattern(layer, head), tokens, title=f"Layer {layer}, head {head} — attention weights", theme=ctx.theme
    )
else:
    label = "QKᵀ/√d_k" if ctx.options.scale else "QKᵀ (unscaled)"
    fig = attention_heatmap(
        obs.shown(obs.scores[layer, head], ctx.hide_special),
        tokens,
        mode="scores",
        title=f"Layer {layer}, head {head} — scores {label}",
        theme=ctx.theme,
    )
show_chart(fig, "attn_main", "attention", f"L{layer}", f"H{head}", mode.split()[0])
if ctx.hide_special:
    st.caption("Special tokens are hidden: rows no longer sum to 1 (the hidden columns' share is not shown).")
st.subheader(f"All heads of layer {layer}")
st.caption("One colour scale for every head, so their strengths can be compared.")
show_chart(
    heads_grid(
        ctx.patterns(layer), tokens, title=f"Layer {layer}: every head", theme=ctx.theme, cols=min(4, obs.n_heads)
    ),
    "attn_grid",
    "attention",
    f"L{layer}",
    "all-heads",
)
st.subheader(f"Mean over the heads of layer {layer}")
show_chart(
    attention_heatmap(
        ctx.patterns(layer).mean(0), tokens, title=f"Layer {layer}: mean over {obs.n_heads} heads", theme=ctx.theme
    ),
    "attn_mean",
    "attention",
    f"L{layer}",
    "mean",
)
