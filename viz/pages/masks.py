"""Masks: switch a causal mask on the loaded model; pad a batch of two texts."""

import streamlit as st

from viz.shell.context import page_context
from viz.shell.services import views
from viz.shell.widgets import layer_head_picker, show_view, show_views

ctx = page_context()
obs = ctx.obs
st.title("Masks")
layer, head = layer_head_picker(obs.n_layers, obs.n_heads)
st.subheader("Causal mask")
show_views(views(ctx, "masks.causal", layer=layer, head=head), "mask_causal")
(change,) = views(ctx, "masks.change")
st.caption(
    "With a causal mask each token sees only itself and the tokens before it. The bars: how far each token's "
    "final vector moves (‖after − before‖ / ‖before‖)."
)
show_view(change, "mask_change")
st.subheader("Padding")
text_b = st.text_input("Second text for the batch", key="pad_text_b")
show_views(views(ctx, "masks.padding", layer=layer, head=head, text_b=text_b), "pad")
