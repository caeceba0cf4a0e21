"""Masks: switch a causal mask on the loaded model; pad a batch of two texts."""

import streamlit as st

from viz.shell.context import page_context
from viz.shell.widgets import layer_head_picker, show_view, show_views
from viz.views import build

ctx = page_context()
obs = ctx.obs
st.title("Masks")
layer, head = layer_head_picker(obs.n_layers, obs.n_heads)
st.subheader("Causal mask")
show_views(build("masks.causal", ctx.source, ctx.theme, layer=layer, head=head), "mask_causal")
(change,) = build("masks.change", ctx.source, ctx.theme)
show_view(change, "mask_change")
st.caption(
    "With a causal mask the first token can only see itself, so early tokens change most when the model "
    "was trained to look both ways; the last token still sees everything."
)
st.subheader("Padding")
text_b = st.text_input("Second text for the batch", key="pad_text_b")
show_views(build("masks.padding", ctx.source, ctx.theme, layer=layer, head=head, text_b=text_b), "pad")
effect = float(ctx.source.padded(text_b, layer)["padding_effect"])
st.caption(
    f"Padded keys get exactly zero weight. The shorter text's real tokens come out the same as without "
    f"padding (largest difference {effect:.1e})."
)
