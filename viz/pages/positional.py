"""Positional encodings: the sinusoidal formula, the model's real encoding, and the permutation lab."""

import numpy as np
import streamlit as st

from model.inside import permutation_check, positional_table
from model.positional import sinusoidal_table
from viz.figures import attention_heatmap
from viz.figures.inside import encoding_curves, encoding_heatmap, position_similarity
from viz.pages.common import ctx, layer_head_picker, show_chart


@st.cache_resource(max_entries=16, show_spinner="Running both orders…")
def cached_permutation(spec, device, ids, special, seed, positions, layer, _model):
    return permutation_check(_model, list(ids), list(special), seed, positions, layer)


c = ctx()
a = c.analysis
cfg = c.loaded.model.cfg
st.title("Positional encodings")
tab_formula, tab_model, tab_perm = st.tabs(["Sinusoidal formula", "This model's encoding", "Permutation lab"])

with tab_formula:
    d = cfg.d_model if cfg.d_model % 2 == 0 else 128
    n = st.slider("Positions", 16, 512, 128, 16, key="pe_positions")
    table = sinusoidal_table(n, d).numpy()
    st.latex(
        r"PE_{(pos,2i)} = \sin\left(pos / 10000^{2i/d}\right),\quad PE_{(pos,2i+1)} = \cos\left(pos / 10000^{2i/d}"
        r"\right)"
    )
    show_chart(
        encoding_heatmap(table, title=f"Sinusoidal encoding, d = {d}", theme=c.theme), "pe_heat", "pe", "sinusoidal"
    )
    dims = st.multiselect("Dimensions to plot", list(range(d)), default=[0, 1, 6, 7, d // 2, d - 2], key="pe_dims")
    if dims:
        show_chart(
            encoding_curves(table, dims, title="Each dimension is a sinusoid; wavelengths grow with i", theme=c.theme),
            "pe_curves",
            "pe",
            "curves",
        )
    show_chart(
        position_similarity(table, title="PE(i)·PE(j): nearby positions look alike", theme=c.theme),
        "pe_sim",
        "pe",
        "similarity",
    )

with tab_model:
    kind, real = positional_table(c.loaded.model, max(a.n_tokens, 64))
    st.markdown(f"**{c.model_name()}** uses **{kind}** positions.")
    if kind == "sinusoidal":
        show_chart(
            encoding_heatmap(real, title="The table this model adds (the formula)", theme=c.theme),
            "pe_model_heat",
            "pe",
            "model",
        )
    elif kind == "learned":
        cols = st.columns(2)
        with cols[0]:
            show_chart(
                encoding_heatmap(real, title="Learned position table", theme=c.theme), "pe_model_heat", "pe", "learned"
            )
        with cols[1]:
            show_chart(
                encoding_heatmap(
                    sinusoidal_table(real.shape[0], real.shape[1]).numpy(),
                    title="Sinusoidal table of the same size",
                    theme=c.theme,
                ),
                "pe_model_sin",
                "pe",
                "sinusoidal-same-size",
            )
        show_chart(
            position_similarity(real, title="Learned: PE(i)·PE(j)", theme=c.theme),
            "pe_model_sim",
            "pe",
            "learned-similarity",
        )
    elif kind == "rope":
        show_chart(
            encoding_heatmap(
                real, title="RoPE rotation angle per dimension pair (radians)", theme=c.theme, x_title="pair"
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
                theme=c.theme,
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
    layer, head = layer_head_picker(c, prefix="perm_")
    positions = st.toggle("Positional encoding on", value=False, key="perm_positions")
    seed = st.number_input("Shuffle seed", 0, 1000, 0, key="perm_seed")
    res = cached_permutation(
        c.spec, c.device, tuple(a.ids), tuple(bool(s) for s in a.special), int(seed), positions, layer, c.loaded.model
    )
    perm = res["perm"]
    shuffled_tokens = [a.tokens[i] for i in perm]
    cols = st.columns(3)
    with cols[0]:
        show_chart(
            attention_heatmap(res["original"][head], a.tokens, title="original order", theme=c.theme),
            "perm_a",
            "perm",
            "original",
        )
    with cols[1]:
        show_chart(
            attention_heatmap(res["shuffled"][head], shuffled_tokens, title="shuffled input", theme=c.theme),
            "perm_b",
            "perm",
            "shuffled",
        )
    with cols[2]:
        show_chart(
            attention_heatmap(res["unshuffled"][head], a.tokens, title="shuffled, then un-shuffled", theme=c.theme),
            "perm_c",
            "perm",
            "unshuffled",
        )
    diff = float(res["max_diff"])
    if positions and cfg.positional != "none":
        st.warning(f"Positions on: the un-shuffled pattern differs from the original by up to {diff:.3f}.")
    else:
        st.success(f"Positions off: the un-shuffled pattern equals the original (largest difference {diff:.1e}).")
