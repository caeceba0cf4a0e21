"""The block: the loaded model's architecture drawn from its config (a click on a part opens its view) and the
residual stream's size after every sublayer, so that pre-norm and post-norm show as numbers."""

import streamlit as st

from model.anatomy import anatomy
from viz.shell.context import page_context
from viz.shell.services import views
from viz.shell.widgets import clicked, follow_open_page, open_page, plain, show_view, show_views

#: parts whose view is on another page (the others are explained here, beside the stream chart)
PAGE_FILES = {
    "tokens": "viz/pages/tokens.py",
    "positional": "viz/pages/positional.py",
    "attention": "viz/pages/attention.py",
    "next-token": "viz/pages/next_token.py",
    "lessons": "viz/pages/lessons.py",
    "overview": "viz/pages/overview.py",
}


def open_part() -> None:
    """Callback: a clicked box opens the page that shows that part, or says here what it does."""
    for key, page in clicked("block_diagram")[:1]:
        st.session_state["_block_part"] = key
        if page in PAGE_FILES:
            if page == "lessons":
                st.session_state["lesson_section"] = "Masked tokens"
            open_page(PAGE_FILES[page])


follow_open_page()
ctx = page_context()
obs = ctx.obs
cfg = ctx.loaded.model.cfg
st.title("The block")
st.caption(
    "The model's own architecture, read from its config: where the norm sits, the residual additions, the heads. "
    "Click a box to open its view (tokens, positions, attention, the prediction head); a norm, an addition or "
    "the feed-forward is explained here and measured in the chart beside it."
)
(diagram,) = views(ctx, "block.diagram")
show_view(diagram, "block_diagram", on_select=open_part, selection_mode="points", width=760)
picked = st.session_state.get("_block_part")
parts = {p.key: p for p in anatomy(cfg).parts}
if picked in parts:
    part = parts[picked]
    st.info(plain(f"{part.label}: {part.detail}."), icon=":material/info:")
st.subheader("The residual stream, measured")
choices = [-1, *range(obs.n_tokens)]
token = st.selectbox(
    "Stream of",
    choices,
    key="block_token",
    format_func=lambda i: "every token (mean)" if i < 0 else f"{i}: {obs.tokens[i]}",
)
(chart,) = views(ctx, "block.stream", token=int(token))
show_view(chart, "block_stream")
st.caption(
    "Top: ‖x‖, the residual stream's norm after the embedding and after every sublayer. Bottom: the norm of what "
    "each sublayer adds, divided by the norm of the stream it is added to (post-norm: before the norm rescales the "
    "sum). The lesson *Pre- or post-norm* puts the bundled model beside MiniLM on this text."
)

if obs.expert_layers:  # a mixture of experts: where the router sends each token
    st.subheader("The experts: where the router sends each token")
    layer = st.selectbox("Layer", obs.expert_layers, key="block_expert_layer")
    show_views(views(ctx, "experts", layer=int(layer)), "block_experts")
