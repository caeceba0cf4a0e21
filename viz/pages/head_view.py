"""Head view: token-to-token lines for one or several heads (as BertViz users know it)."""

import streamlit as st

from viz.figures import head_view
from viz.pages.common import ctx, layer_head_picker, show_chart

c = ctx()
a = c.analysis
st.title("Head view")
st.caption("Query tokens on the left, key tokens on the right; the stronger the weight, the more opaque the line.")
layer, _ = layer_head_picker(c, head=False)
st.session_state.setdefault("hv_heads", [min(st.session_state.get("head", 0), a.n_heads - 1)])
st.session_state["hv_heads"] = [h for h in st.session_state["hv_heads"] if h < a.n_heads]
heads = st.multiselect("Heads", list(range(a.n_heads)), key="hv_heads", format_func=lambda h: f"head {h}")
threshold = st.slider("Hide lines lighter than", 0.0, 0.5, 0.05, 0.01, key="hv_threshold")
if not heads:
    st.info("Pick at least one head.")
else:
    n = len(c.tokens)
    if n > 150:
        st.warning(f"{n} tokens make a very tall view; raise the threshold or hide special tokens for clarity.")
    fig = head_view(
        c.patterns(layer)[heads],
        c.tokens,
        head_labels=[f"head {h}" for h in heads],
        threshold=threshold,
        title=f"Layer {layer}: heads {', '.join(map(str, heads))}",
        theme=c.theme,
    )
    show_chart(fig, "hv_fig", "head-view", f"L{layer}", "H" + "-".join(map(str, heads)))
