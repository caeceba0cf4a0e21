"""Across layers: attention rollout and attention flow."""

import streamlit as st

from viz.shell.context import page_context
from viz.shell.widgets import show_view, unavailable
from viz.views import ViewUnavailableError, build

ctx = page_context()
st.title("Rollout and flow")
st.caption(
    "Raw attention of the last layer says little about which *input* tokens reached an output. Rollout multiplies "
    "the head-averaged layers, each mixed half-and-half with the identity for the residual stream (Abnar & "
    "Zuidema, 2020). Rows are output tokens, columns input tokens."
)
(fig,) = build("rollout", ctx.source, ctx.theme)
show_view(fig, "rollout_fig")
st.subheader("Attention flow")
try:
    (fig,) = build("flow", ctx.source, ctx.theme)
    show_view(fig, "flow_fig")
except ViewUnavailableError as exc:
    unavailable(exc)
