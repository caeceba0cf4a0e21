"""Q / K / V: the computation of one head step by step, one query explained, Q/K space, value norms."""

import numpy as np
import streamlit as st

from model.analysis.norms import value_contributions
from model.analysis.projection import pca_2d
from model.analysis.steps import explain_query, observed_head_steps
from model.observe import head_weights
from viz.figures import (
    attention_heatmap,
    matrix_heatmap,
    qk_scatter,
    query_explained,
    weights_vs_contributions,
)
from viz.shell.context import page_context
from viz.shell.widgets import layer_head_picker, show_chart

ctx = page_context()
obs = ctx.obs
st.title("Q / K / V")
st.caption("All tokens are shown here (special ones included): hiding keys would change the computation.")
layer, head = layer_head_picker(obs.n_layers, obs.n_heads)
tokens = obs.tokens
weights = head_weights(ctx.loaded.model, layer, head)
steps = observed_head_steps(obs, weights, layer, head)
d_k = steps.q.shape[1]
tab_steps, tab_query, tab_space, tab_values = st.tabs(["Step by step", "One query", "Query/key space", "Value norms"])

with tab_steps:
    st.markdown(
        f"**X → Q, K, V → QKᵀ → ÷√d_k → + mask → softmax → ·V → head output → concat · W_o** "
        f"for layer {layer}, head {head} (d_k = {d_k}). Hover any cell for its exact value."
    )
    show_chart(
        matrix_heatmap(steps.x, tokens, title="X: input to attention", theme=ctx.theme),
        "qkv_x",
        "qkv",
        f"L{layer}",
        "X",
    )

    def panels(*row: tuple) -> None:
        """One row of step panels, each (figure, key suffix, file-name part, per head?)."""
        for col, (fig, key, part, per_head) in zip(st.columns(len(row)), row):
            with col:
                show_chart(fig, f"qkv_{key}", "qkv", f"L{layer}", *([f"H{head}"] if per_head else []), part)

    qkv_max = float(max(np.abs(steps.q).max(), np.abs(steps.k).max(), np.abs(steps.v).max()))
    panels(
        *(
            (matrix_heatmap(m, tokens, title=name, zmax=qkv_max, theme=ctx.theme), wname, name[0], True)
            for name, m, wname in (
                ("Q = X·W_q", steps.q, "W_q"),
                ("K = X·W_k", steps.k, "W_k"),
                ("V = X·W_v", steps.v, "W_v"),
            )
        )
    )
    s_max = float(np.abs(np.concatenate([steps.qk.ravel(), steps.scaled.ravel()])).max())
    scores = dict(col_labels=tokens, zmax=s_max, theme=ctx.theme)
    label = "÷ √d_k" if ctx.options.scale else "(scaling switched off)"
    panels(
        (matrix_heatmap(steps.qk, tokens, title="QKᵀ", value_name="q·k", **scores), "qk", "QK", True),
        (
            matrix_heatmap(steps.scaled, tokens, title=f"QKᵀ {label}", value_name="score", **scores),
            "scaled",
            "scaled",
            True,
        ),
        (
            matrix_heatmap(steps.masked, tokens, title="+ mask (−∞ grey)", value_name="score", **scores),
            "masked",
            "masked",
            True,
        ),
    )
    panels(
        (
            attention_heatmap(steps.pattern, tokens, title=f"softmax — shape {steps.pattern.shape}", theme=ctx.theme),
            "softmax",
            "softmax",
            True,
        ),
        (matrix_heatmap(steps.z, tokens, title="head output = softmax · V", theme=ctx.theme), "z", "z", True),
    )
    panels(
        (
            matrix_heatmap(steps.concat, tokens, title=f"concat of {obs.n_heads} heads", theme=ctx.theme),
            "concat",
            "concat",
            False,
        ),
        (matrix_heatmap(steps.out, tokens, title="· W_o = attention output", theme=ctx.theme), "out", "out", False),
    )
    err_p = float(np.abs(steps.pattern - obs.patterns[layer, head]).max())
    err_o = float(np.abs(steps.out - obs.attn_out[layer]).max())
    st.caption(
        f"Check against the model's own forward pass: softmax differs by at most {err_p:.1e}, the "
        f"attention output by at most {err_o:.1e}."
    )

with tab_query:
    query = st.selectbox("Query token", range(len(tokens)), key="qkv_query", format_func=lambda i: f"{i}: {tokens[i]}")
    qe = explain_query(steps.q, steps.k, query, obs.scores[layer, head][query], scale=ctx.options.scale)
    show_chart(
        query_explained(qe, tokens, tokens[query], theme=ctx.theme),
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
            theme=ctx.theme,
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
    contrib, norms = value_contributions(steps.pattern, steps.v, weights["w_o"])
    show_chart(
        weights_vs_contributions(
            steps.pattern,
            contrib,
            tokens,
            title=f"L{layer} H{head}: weight vs what each key really contributes",
            theme=ctx.theme,
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
