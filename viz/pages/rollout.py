"""Across layers: attention rollout and attention flow."""

import streamlit as st

from viz.shell.components import token_strip
from viz.shell.context import page_context
from viz.shell.services import views
from viz.shell.widgets import show_focusable, show_view, unavailable
from viz.views import ViewUnavailableError

ctx = page_context()
st.title("Rollout and flow")
st.caption(
    "Raw attention of the last layer says little about which *input* tokens reached an output. Rollout multiplies "
    "the head-averaged layers, each mixed half-and-half with the identity for the residual stream (Abnar & "
    "Zuidema, 2020). Rows are output tokens, columns input tokens."
)
token_strip(ctx.obs.tokens, ctx.obs.special)
focus = {"query": st.session_state["focus_query"], "key": st.session_state["focus_key"]}
(fig,) = views(ctx, "rollout", **focus)
show_focusable(fig, "rollout_fig")
st.subheader("One token, layer by layer")
st.caption(
    "The row of the token in focus after each layer, as Abnar & Zuidema draw it (click a cell above or a token to "
    "change the token); flow beside it for short texts."
)
(token_fig,) = views(ctx, "rollout.token", query=focus["query"])
show_view(token_fig, "rollout_token_fig")
st.subheader("Attention flow")
try:
    (fig,) = views(ctx, "flow")
    show_view(fig, "flow_fig")
except ViewUnavailableError as exc:
    unavailable(exc)
