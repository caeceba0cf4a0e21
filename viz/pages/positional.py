"""Positional encodings: the sinusoidal formula, the model's real encoding, and the permutation lab."""

import numpy as np
import streamlit as st

from model.observe import position_table
from model.positional import sinusoidal_table
from viz.figures import attention_heatmap, encoding_curves, encoding_heatmap, position_similarity
from viz.shell.context import page_context
from viz.shell.services import get_permutation
from viz.shell.widgets import layer_head_picker, show_chart

ctx = page_context()
obs = ctx.obs
cfg = ctx.loaded.model.cfg
st.title("Positional encodings")
tab_formula, tab_model, tab_perm = st.tabs(["Sinusoidal formula", "This model's encoding", "Permutation lab"])

with tab_formula:
    d = cfg.d_model - cfg.d_model % 2  # the formula needs an even width
    n = st.slider("Positions", 16, 512, step=16, key="pe_positions")
    table = sinusoidal_table(n, d).numpy()
    st.latex(
        r"PE_{(pos,2i)} = \sin\left(pos / 10000^{2i/d}\right),\quad PE_{(pos,2i+1)} = \cos\left(pos / 10000^{2i/d}"
        r"\right)"
    )
    show_chart(
        encoding_heatmap(table, title=f"Sinusoidal encoding, d = {d}", theme=ctx.theme), "pe_heat", "pe", "sinusoidal"
    )
    dims = st.multiselect("Dimensions to plot", list(range(d)), key="pe_dims")
    if dims:
        show_chart(
            encoding_curves(
                table, dims, title="Each dimension is a sinusoid; wavelengths grow with i", theme=ctx.theme
            ),
            "pe_curves",
            "pe",
            "curves",
        )
    show_chart(
        position_similarity(table, title="PE(i)·PE(j): nearby positions look alike", theme=ctx.theme),
        "pe_sim",
        "pe",
        "similarity",
    )

with tab_model:
    kind, real = position_table(ctx.loaded.model, max(obs.n_tokens, 64))
    st.markdown(f"**{ctx.model_name}** uses **{kind}** positions.")
    if kind == "sinusoidal":
        show_chart(
            encoding_heatmap(real, title="The table this model adds (the formula)", theme=ctx.theme),
            "pe_model_heat",
            "pe",
            "model",
        )
    elif kind == "learned":
        cols = st.columns(2)
        with cols[0]:
            show_chart(
                encoding_heatmap(real, title="Learned position table", theme=ctx.theme),
                "pe_model_heat",
                "pe",
                "learned",
            )
        with cols[1]:
            show_chart(
                encoding_heatmap(
                    sinusoidal_table(real.shape[0], real.shape[1]).numpy(),
                    title="Sinusoidal table of the same size",
                    theme=ctx.theme,
                ),
                "pe_model_sin",
                "pe",
                "sinusoidal-same-size",
            )
        show_chart(
            position_similarity(real, title="Learned: PE(i)·PE(j)", theme=ctx.theme),
            "pe_model_sim",
            "pe",
            "learned-similarity",
        )
    elif kind == "rope":
        show_chart(
            encoding_heatmap(
                real, title="RoPE rotation angle per dimension pair (radians)", theme=ctx.theme, x_title="pair"
            ),
            "pe_model_heat",
            "pe",
            "rope",
        )
        show_chart(
            encoding_curves(
                np.cos(real),
                [0, real.shape[1] // 2, real.shape[1] - 1],
                title="cos(angle) over position: fast pairs and slow pairs",
                theme=ctx.theme,
            ),
            "pe_model_curves",
            "pe",
            "rope-curves",
        )
        st.caption("RoPE rotates q and k instead of adding a vector, so q·k depends only on their distance.")
    else:
        st.info(
            "This model has no positional encoding: without it, attention cannot tell word order apart "
            "(see the permutation lab)."
        )

with tab_perm:
    st.markdown(
        "Shuffle the ordinary tokens, run both orders, then undo the shuffle on the second pattern. "
        "**Without positions** attention is permutation-equivariant: the two agree exactly. **With "
        "positions** they do not."
    )
    layer, head = layer_head_picker(obs.n_layers, obs.n_heads, prefix="perm_")
    positions = st.toggle("Positional encoding on", key="perm_positions")
    seed = st.number_input("Shuffle seed", 0, 1000, key="perm_seed")
    special = tuple(bool(s) for s in obs.special)
    res = get_permutation(ctx.spec, ctx.device, tuple(obs.ids), special, int(seed), positions, layer, ctx.loaded.model)
    perm = res["perm"]
    shuffled_tokens = [obs.tokens[i] for i in perm]
    cols = st.columns(3)
    with cols[0]:
        show_chart(
            attention_heatmap(res["original"][head], obs.tokens, title="original order", theme=ctx.theme),
            "perm_a",
            "perm",
            "original",
        )
    with cols[1]:
        show_chart(
            attention_heatmap(res["shuffled"][head], shuffled_tokens, title="shuffled input", theme=ctx.theme),
            "perm_b",
            "perm",
            "shuffled",
        )
    with cols[2]:
        show_chart(
            attention_heatmap(res["unshuffled"][head], obs.tokens, title="shuffled, then un-shuffled", theme=ctx.theme),
            "perm_c",
            "perm",
            "unshuffled",
        )
    diff = float(res["max_diff"])
    if positions and cfg.positional != "none":
        st.warning(f"Positions on: the un-shuffled pattern differs from the original by up to {diff:.3f}.")
    else:
        st.success(f"Positions off: the un-shuffled pattern equals the original (largest difference {diff:.1e}).")
