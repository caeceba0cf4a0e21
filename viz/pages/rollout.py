"""Across layers: attention rollout and attention flow."""

import streamlit as st

from model.analysis.flow import MAX_FLOW_TOKENS, attention_rollout
from viz.figures import attention_heatmap
from viz.shell.context import page_context
from viz.shell.services import get_flow
from viz.shell.widgets import show_chart

ctx = page_context()
obs = ctx.obs
st.title("Rollout and flow")
st.caption(
    "Raw attention of the last layer says little about which *input* tokens reached an output. Rollout multiplies "
    "the head-averaged layers, each mixed half-and-half with the identity for the residual stream (Abnar & "
    "Zuidema, 2020). Rows are output tokens, columns input tokens."
)
roll = attention_rollout(obs.patterns)
show_chart(
    attention_heatmap(roll, obs.tokens, title=f"Attention rollout through {obs.n_layers} layers", theme=ctx.theme),
    "rollout_fig",
    "rollout",
)
st.subheader("Attention flow")
if obs.n_tokens > MAX_FLOW_TOKENS:
    st.info(
        f"Attention flow solves {obs.n_tokens}² max-flow problems; it is offered up to {MAX_FLOW_TOKENS} tokens "
        f"so it stays within a few seconds. This text has {obs.n_tokens}: shorten it, or use rollout above."
    )
else:
    flow = get_flow(ctx.spec, ctx.device, obs.text, ctx.options, obs.patterns)
    show_chart(
        attention_heatmap(flow, obs.tokens, title="Attention flow (max-flow, rows normalised)", theme=ctx.theme),
        "flow_fig",
        "flow",
    )
