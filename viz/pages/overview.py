"""Model overview: every layer × head as a thumbnail; click one to open it on the attention page."""

from contextlib import nullcontext

import streamlit as st

from viz.shell.context import page_context
from viz.shell.longrun import WHOLE, long_observation, reads_whole
from viz.shell.services import views
from viz.shell.widgets import (
    ATTENTION_PAGE,
    clicked,
    follow_open_page,
    layer_head_picker,
    open_clicked,
    open_head,
    show_view,
)


def open_clicked_head() -> None:
    """Callback: a clicked thumbnail becomes the head in focus; the page then opens the attention map."""
    for layer, head in clicked("overview_fig")[:1]:
        open_head(layer, head)


ctx = page_context()
obs = ctx.obs
follow_open_page()
whole = reads_whole(ctx)
st.title("Model overview", help=f"Marked “{WHOLE}”: on a long text this page reads every token." if whole else None)
# the thumbnails go through the fused kernel as soon as the pass is over (model/analysis/thumbs.py), not after the
# summary every other whole-text page waits for; a soft cap on the scores (Gemma 2) needs the summary
capped = bool(ctx.loaded.model.cfg.attn_softcap)
long = long_observation(ctx, summary=capped) if whole else None
st.caption(
    f"All {obs.n_layers} × {obs.n_heads} heads"
    + (f" over all {long.n_tokens:,} tokens" if long is not None else "")
    + ". Thumbnails are block-averaged to at most 32 × 32 cells and each is "
    "scaled to its own maximum, so you see the shape of each pattern. Click a head (or pick it below) to open it."
)
summing = f"Summing every head's thumbnail over all {long.n_tokens:,} tokens…" if long is not None else None
with st.spinner(summing, show_time=True) if summing else nullcontext():  # about 10 s at 8,192 tokens, once
    (fig,) = views(ctx, "overview", layer=st.session_state["layer"], head=st.session_state["head"])
show_view(fig, "overview_fig", on_select=open_clicked_head, selection_mode="points")
with st.form("overview_pick"):
    layer, head = layer_head_picker(obs.n_layers, obs.n_heads, prefix="ov_")
    if st.form_submit_button("Open this head on the attention map"):
        st.session_state["layer"], st.session_state["head"] = layer, head
        st.switch_page(ATTENTION_PAGE)
if obs.cross is not None and long is None:  # an encoder–decoder's decoder: its heads also read the source
    st.subheader("Cross-attention: the target reading the source")
    st.caption("The same heads' second attention, on the encoder's output; click one to open it on the attention map.")
    (cross,) = views(ctx, "cross_overview", layer=st.session_state["layer"], head=st.session_state["head"])
    show_view(cross, "overview_cross", on_select=lambda: open_clicked("overview_cross"), selection_mode="points")
