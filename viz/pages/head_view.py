"""Head view: token-to-token lines for one or several heads (as BertViz users know it)."""

import streamlit as st

from viz.figures.headview import WINDOW
from viz.shell.context import page_context
from viz.shell.widgets import layer_head_picker, show_view, unavailable
from viz.views import ViewUnavailableError, build

ctx = page_context()
obs = ctx.obs
st.title("Head view")
st.caption("Query tokens on the left, key tokens on the right; the stronger the weight, the more opaque the line.")
layer, _ = layer_head_picker(obs.n_layers, obs.n_heads, head=False)
heads = st.multiselect("Heads", list(range(obs.n_heads)), key="hv_heads", format_func=lambda h: f"head {h}")
threshold = st.slider("Hide lines lighter than", 0.0, 0.5, step=0.01, key="hv_threshold")
n = len(ctx.tokens)
start = 0
if n > WINDOW:
    start = st.slider(
        f"First token shown ({WINDOW} at a time, so the view stays readable)",
        0,
        n - WINDOW,
        key="hv_start",
    )
try:
    (fig,) = build("headview", ctx.source, ctx.theme, layer=layer, heads=tuple(heads), threshold=threshold, start=start)
    show_view(fig, "hv_fig")
except ViewUnavailableError as exc:
    unavailable(exc)
