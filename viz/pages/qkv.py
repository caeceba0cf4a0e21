"""Q / K / V: the computation of one head step by step, one query explained, Q/K space, value norms."""

import numpy as np
import streamlit as st

from model.inside import analysis_steps, explain_query, pca_2d, value_contributions
from viz.figures import attention_heatmap
from viz.figures.inside import matrix_heatmap, qk_scatter, query_explained, weights_vs_contributions
from viz.pages.common import ctx, layer_head_picker, show_chart

c = ctx()
a = c.analysis
st.title("Q / K / V")
st.caption("All tokens are shown here (special ones included): hiding keys would change the computation.")
layer, head = layer_head_picker(c)
tokens = a.tokens
steps, w = analysis_steps(a, c.loaded.model, layer, head)
d_k = steps.q.shape[1]
tab_pipe, tab_query, tab_space, tab_values = st.tabs(["Pipeline", "One query", "Query/key space", "Value norms"])

with tab_pipe:
    st.markdown(
        f"**X → Q, K, V → QKᵀ → ÷√d_k → + mask → softmax → ·V → head output → concat · W_o** "
        f"for layer {layer}, head {head} (d_k = {d_k}). Hover any cell for its exact value."
    )
    show_chart(matrix_heatmap(steps.x, tokens, title="X: input to attention", theme=c.theme), "qkv_x", "qkv", "X")
    qkv_max = float(max(np.abs(steps.q).max(), np.abs(steps.k).max(), np.abs(steps.v).max()))
    cols = st.columns(3)
    for col, (name, m, wname) in zip(
        cols, (("Q = X·W_q", steps.q, "W_q"), ("K = X·W_k", steps.k, "W_k"), ("V = X·W_v", steps.v, "W_v"))
    ):
        with col:
            show_chart(
                matrix_heatmap(m, tokens, title=name, zmax=qkv_max, theme=c.theme),
                f"qkv_{wname}",
                "qkv",
                f"L{layer}",
                f"H{head}",
                name[0],
            )
    finite = np.concatenate([steps.qk.ravel(), steps.scaled.ravel()])
    s_max = float(np.abs(finite).max())
    cols = st.columns(3)
    with cols[0]:
        show_chart(
            matrix_heatmap(
                steps.qk, tokens, col_labels=tokens, title="QKᵀ", zmax=s_max, theme=c.theme, value_name="q·k"
            ),
            "qkv_qk",
            "qkv",
            f"L{layer}",
            f"H{head}",
            "QK",
        )
    with cols[1]:
        label = "÷ √d_k" if c.options.scale else "(scaling switched off)"
        show_chart(
            matrix_heatmap(
                steps.scaled,
                tokens,
                col_labels=tokens,
                title=f"QKᵀ {label}",
                zmax=s_max,
                theme=c.theme,
                value_name="score",
            ),
            "qkv_scaled",
            "qkv",
            f"L{layer}",
            "scaled",
        )
    with cols[2]:
        show_chart(
            matrix_heatmap(
                steps.masked,
                tokens,
                col_labels=tokens,
                title="+ mask (−∞ grey)",
                zmax=s_max,
                theme=c.theme,
                value_name="score",
            ),
            "qkv_masked",
            "qkv",
            f"L{layer}",
            "masked",
        )
    cols = st.columns(2)
    with cols[0]:
        show_chart(
            attention_heatmap(steps.pattern, tokens, title=f"softmax — shape {steps.pattern.shape}", theme=c.theme),
            "qkv_softmax",
            "qkv",
            f"L{layer}",
            f"H{head}",
            "softmax",
        )
    with cols[1]:
        show_chart(
            matrix_heatmap(steps.z, tokens, title="head output = softmax · V", theme=c.theme),
            "qkv_z",
            "qkv",
            f"L{layer}",
            f"H{head}",
            "z",
        )
    cols = st.columns(2)
    with cols[0]:
        show_chart(
            matrix_heatmap(steps.concat, tokens, title=f"concat of {a.n_heads} heads", theme=c.theme),
            "qkv_concat",
            "qkv",
            f"L{layer}",
            "concat",
        )
    with cols[1]:
        show_chart(
            matrix_heatmap(steps.out, tokens, title="· W_o = attention output", theme=c.theme),
            "qkv_out",
            "qkv",
            f"L{layer}",
            "out",
        )
    err_p = float(np.abs(steps.pattern - a.patterns[layer, head]).max())
    err_o = float(np.abs(steps.out - a.attn_out[layer]).max())
    st.caption(
        f"Check against the model's own forward pass: softmax differs by at most {err_p:.1e}, the "
        f"attention output by at most {err_o:.1e}."
    )

with tab_query:
    query = st.selectbox(
        "Query token",
        range(len(tokens)),
        key="qkv_query",
        format_func=lambda i: f"{i}: {tokens[i]}",
        index=min(1, len(tokens) - 1),
    )
    qe = explain_query(steps.q, steps.k, query, a.scores[layer, head][query], scale=c.options.scale)
    show_chart(
        query_explained(qe, tokens, tokens[query], theme=c.theme),
        "qkv_query_fig",
        "qkv",
        f"L{layer}",
        f"H{head}",
        "query",
        query,
    )
    top = np.argsort(-qe.weights)[:3]
    st.caption("Strongest keys: " + ", ".join(f"{tokens[j]} ({qe.weights[j]:.1%})" for j in top))

with tab_space:
    coords, ratio = pca_2d(np.concatenate([steps.q, steps.k]))
    n = len(tokens)
    show_chart(
        qk_scatter(
            coords[:n],
            coords[n:],
            tokens,
            ratio,
            title=f"Queries and keys of L{layer} H{head} in one PCA plane",
            theme=c.theme,
        ),
        "qkv_space",
        "qkv",
        f"L{layer}",
        f"H{head}",
        "pca",
    )
    st.caption(
        "A query lands near the keys it attends to when their dot product is large; PCA keeps the two "
        "directions along which these vectors vary most."
    )

with tab_values:
    contrib, norms = value_contributions(steps.pattern, steps.v, w["w_o"])
    show_chart(
        weights_vs_contributions(
            steps.pattern,
            contrib,
            tokens,
            title=f"L{layer} H{head}: weight vs what each key really contributes",
            theme=c.theme,
        ),
        "qkv_values",
        "qkv",
        f"L{layer}",
        f"H{head}",
        "value-norms",
    )
    low = np.argsort(norms)[:3]
    st.caption(
        "Contribution = α·‖v·W_o‖ (Kobayashi et al., 2020). Smallest value norms: "
        + ", ".join(f"{tokens[j]} ({norms[j]:.2f})" for j in low)
        + " — heavy attention on a token with a tiny value vector moves almost nothing."
    )
