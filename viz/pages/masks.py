"""Masks: switch a causal mask on the loaded model; pad a batch of two texts."""

import streamlit as st

from model.experiments import forward_seconds
from viz.shell.context import page_context
from viz.shell.services import views
from viz.shell.widgets import as_built_note, ask_once, layer_head_picker, show_view, show_views

ASK_ABOVE_S = 1.5  # a padded batch expected to take longer waits for the button, with its estimate
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
as_built_note(ctx, "The padded batch runs")
text_b = st.text_input("Second text for the batch", key="pad_text_b")
n_b = len(ctx.loaded.tokenizer.encode(text_b, max_len=ctx.loaded.model.cfg.max_seq_len).ids)
estimate = forward_seconds(ctx.loaded.model.cfg, max(obs.n_tokens, n_b), rows=2)  # the batch; the short text alone
estimate += forward_seconds(ctx.loaded.model.cfg, min(obs.n_tokens, n_b))
if ctx.device == "cpu" and estimate > ASK_ABOVE_S:
    ask_once(
        (ctx.spec, ctx.device, obs.text, text_b), "_asked_padding",
        f"The padded batch runs the model again on two rows of {max(obs.n_tokens, n_b)} tokens: about "
        f"{estimate:.1f} s on this server's CPU, so it waits for the button (the causal mask above is shown "
        "already). Once run, every layer and head follows without asking again.",
        f"Run the padded batch (about {estimate:.1f} s)", "pad_run",
    )  # fmt: skip
show_views(views(ctx, "masks.padding", layer=layer, head=head, text_b=text_b), "pad")
