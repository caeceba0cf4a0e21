"""Q / K / V: the computation of one head step by step, one query explained, Q/K space, value norms."""

import numpy as np
import streamlit as st

from model.analysis.norms import value_contributions
from viz.shell.context import page_context
from viz.shell.widgets import layer_head_picker, show_view, show_views
from viz.views import build

ctx = page_context()
obs = ctx.obs
st.title("Q / K / V")
st.caption("All tokens are shown here (special ones included): hiding keys would change the computation.")
layer, head = layer_head_picker(obs.n_layers, obs.n_heads)
tokens = obs.tokens
steps, head_w = ctx.source.steps(layer, head)
d_k = steps.q.shape[1]
tab_steps, tab_query, tab_space, tab_values = st.tabs(["Step by step", "One query", "Query/key space", "Value norms"])


def views(key: str, **selection):
    return build(key, ctx.source, ctx.theme, **selection)


with tab_steps:
    st.markdown(
        f"**X → Q, K, V → QKᵀ → ÷√d_k → + mask → softmax → ·V → head output → concat · W_o** "
        f"for layer {layer}, head {head} (d_k = {d_k}). Hover any cell for its exact value."
    )
    show_views(views("qkv.x", layer=layer), "qkv_x")
    show_views(views("qkv.projections", layer=layer, head=head), "qkv_proj")
    show_views(views("qkv.scores", layer=layer, head=head), "qkv_scores")
    show_views(views("qkv.softmax", layer=layer, head=head), "qkv_softmax")
    show_views(views("qkv.z", layer=layer, head=head), "qkv_z")
    show_views(views("qkv.output", layer=layer), "qkv_out")
    err_p = float(np.abs(steps.pattern - obs.patterns[layer, head]).max())
    err_o = float(np.abs(steps.out - obs.attn_out[layer]).max())
    st.caption(
        f"Check against the model's own forward pass: softmax differs by at most {err_p:.1e}, the "
        f"attention output by at most {err_o:.1e}."
    )

with tab_query:
    query = st.selectbox("Query token", range(len(tokens)), key="qkv_query", format_func=lambda i: f"{i}: {tokens[i]}")
    (fig,) = views("qkv.query", layer=layer, head=head, query=query)
    show_view(fig, "qkv_query_fig")
    weights = steps.pattern[query]
    top = np.argsort(-weights)[:3]
    st.caption("Strongest keys: " + ", ".join(f"{tokens[j]} ({weights[j]:.1%})" for j in top))

with tab_space:
    (fig,) = views("qkv.plane", layer=layer, head=head, query=query)
    show_view(fig, "qkv_space")
    st.caption(
        "A query lands near the keys it attends to when their dot product is large; PCA keeps the two "
        "directions along which these vectors vary most. Labels: the query chosen under “One query” and the "
        "three keys it weighs most; hover any point for its token."
    )

with tab_values:
    (fig,) = views("qkv.values", layer=layer, head=head)
    show_view(fig, "qkv_values")
    _, norms = value_contributions(steps.pattern, steps.v, head_w["w_o"])
    low = np.argsort(norms)[:3]
    st.caption(
        "Contribution = α·‖v·W_o‖ (Kobayashi et al., 2020). Smallest value norms: "
        + ", ".join(f"{tokens[j]} ({norms[j]:.2f})" for j in low)
        + " — heavy attention on a token with a tiny value vector moves almost nothing."
    )
