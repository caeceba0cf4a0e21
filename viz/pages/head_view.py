"""Head view: token-to-token lines for one or several heads (as BertViz users know it)."""

import streamlit as st

from viz.figures import head_view
from viz.shell.context import page_context
from viz.shell.widgets import layer_head_picker, show_chart

ctx = page_context()
obs = ctx.obs
st.title("Head view")
st.caption("Query tokens on the left, key tokens on the right; the stronger the weight, the more opaque the line.")
layer, _ = layer_head_picker(obs.n_layers, obs.n_heads, head=False)
heads = st.multiselect("Heads", list(range(obs.n_heads)), key="hv_heads", format_func=lambda h: f"head {h}")
threshold = st.slider("Hide lines lighter than", 0.0, 0.5, step=0.01, key="hv_threshold")
if not heads:
    st.info("Pick at least one head.")
else:
    n = len(ctx.tokens)
    if n > 150:
        st.warning(f"{n} tokens make a very tall view; raise the threshold or hide special tokens for clarity.")
    fig = head_view(
        ctx.patterns(layer)[heads],
        ctx.tokens,
        head_labels=[f"head {h}" for h in heads],
        threshold=threshold,
        title=f"Layer {layer}: heads {', '.join(map(str, heads))}",
        theme=ctx.theme,
    )
    show_chart(fig, "hv_fig", "head-view", f"L{layer}", "H" + "-".join(map(str, heads)))
