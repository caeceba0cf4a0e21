"""Across layers: attention rollout and attention flow."""

import streamlit as st

from model.inside import MAX_FLOW_TOKENS, attention_flow, attention_rollout
from viz.figures import attention_heatmap
from viz.pages.common import ctx, show_chart


@st.cache_resource(max_entries=16, show_spinner="Computing attention flow…")
def cached_flow(spec, device, text, options, _patterns):
    return attention_flow(_patterns)


c = ctx()
a = c.analysis
st.title("Rollout and flow")
st.caption(
    "Raw attention of the last layer says little about which *input* tokens reached an output. Rollout multiplies "
    "the head-averaged layers, each mixed half-and-half with the identity for the residual stream (Abnar & "
    "Zuidema, 2020). Rows are output tokens, columns input tokens."
)
roll = attention_rollout(a.patterns)
show_chart(
    attention_heatmap(roll, a.tokens, title=f"Attention rollout through {a.n_layers} layers", theme=c.theme),
    "rollout_fig",
    "rollout",
)
st.subheader("Attention flow")
if a.n_tokens > MAX_FLOW_TOKENS:
    st.info(
        f"Attention flow solves {a.n_tokens}² max-flow problems; it is offered up to {MAX_FLOW_TOKENS} tokens "
        f"so it stays within a few seconds. This text has {a.n_tokens}: shorten it, or use rollout above."
    )
else:
    flow = cached_flow(c.spec, c.device, a.text, c.options, a.patterns)
    show_chart(
        attention_heatmap(flow, a.tokens, title="Attention flow (max-flow, rows normalised)", theme=c.theme),
        "flow_fig",
        "flow",
    )
