"""Model overview: every layer × head as a thumbnail; pick one to open it on the attention page."""

import streamlit as st

from viz.shell.context import page_context
from viz.shell.widgets import layer_head_picker, show_view
from viz.views import build

ctx = page_context()
obs = ctx.obs
st.title("Model overview")
st.caption(
    f"All {obs.n_layers} × {obs.n_heads} heads. Thumbnails are block-averaged to at most 32 × 32 cells and each is "
    "scaled to its own maximum, so you see the shape of each pattern. Click a head (or pick it below) to open it."
)
(fig,) = build("overview", ctx.source, ctx.theme, layer=st.session_state["layer"], head=st.session_state["head"])
event = show_view(fig, "overview_fig", on_select="rerun", selection_mode="points")
points = (event or {}).get("selection", {}).get("points", []) if event else []
if points and "customdata" in points[0]:
    st.session_state["layer"], st.session_state["head"] = (int(v) for v in points[0]["customdata"])
    st.switch_page("viz/pages/attention.py")
with st.form("overview_pick"):
    layer, head = layer_head_picker(obs.n_layers, obs.n_heads, prefix="ov_")
    if st.form_submit_button("Open this head on the attention map"):
        st.session_state["layer"], st.session_state["head"] = layer, head
        st.switch_page("viz/pages/attention.py")
