"""Attention map: one head as a heatmap (weights or raw scores), all heads of its layer, the mean."""

import numpy as np
import streamlit as st

from viz.figures import attention_heatmap, heads_grid
from viz.pages.common import ctx, layer_head_picker, show_chart

c = ctx()
a = c.analysis
st.title("Attention map")
layer, head = layer_head_picker(c)
col1, col2 = st.columns([2, 1])
what = col1.radio(
    "Show",
    ["softmax weights", "raw scaled scores (QKᵀ/√d_k)"],
    horizontal=True,
    key="attn_mode",
    help="Scores are what goes into the softmax; masked cells are −∞ and drawn grey.",
)
tokens = c.tokens
k = c.keep
if what.startswith("softmax"):
    fig = attention_heatmap(
        c.pattern(layer, head), tokens, title=f"Layer {layer}, head {head} — attention weights", theme=c.theme
    )
elif a.scores is not None:
    scores = a.scores[layer, head][np.ix_(k, k)]
    label = "QKᵀ/√d_k" if c.options.scale else "QKᵀ (unscaled)"
    fig = attention_heatmap(
        scores, tokens, mode="scores", title=f"Layer {layer}, head {head} — scores {label}", theme=c.theme
    )
show_chart(fig, "attn_main", "attention", f"L{layer}", f"H{head}", what.split()[0])
if c.hide_special:
    st.caption("Special tokens are hidden: rows no longer sum to 1 (the hidden columns' share is not shown).")

st.subheader(f"All heads of layer {layer}")
st.caption("One colour scale for every head, so their strengths can be compared.")
show_chart(
    heads_grid(c.patterns(layer), tokens, title=f"Layer {layer}: every head", theme=c.theme, cols=min(4, a.n_heads)),
    "attn_grid",
    "attention",
    f"L{layer}",
    "all-heads",
)
st.subheader(f"Mean over the heads of layer {layer}")
show_chart(
    attention_heatmap(
        c.patterns(layer).mean(0), tokens, title=f"Layer {layer}: mean over {a.n_heads} heads", theme=c.theme
    ),
    "attn_mean",
    "attention",
    f"L{layer}",
    "mean",
)
