"""Positional encodings: the sinusoidal formula, the model's real encoding, and the permutation lab."""

import streamlit as st

from viz.shell.context import page_context
from viz.shell.widgets import layer_head_picker, show_view, show_views, unavailable
from viz.views import ViewUnavailableError, build

ctx = page_context()
obs = ctx.obs
cfg = ctx.loaded.model.cfg
st.title("Positional encodings")
tab_formula, tab_model, tab_perm = st.tabs(["Sinusoidal formula", "This model's encoding", "Permutation lab"])

with tab_formula:
    d = cfg.d_model - cfg.d_model % 2  # the formula needs an even width
    n = st.slider("Positions", 16, 512, step=16, key="pe_positions")
    st.latex(
        r"PE_{(pos,2i)} = \sin\left(pos / 10000^{2i/d}\right),\quad PE_{(pos,2i+1)} = \cos\left(pos / 10000^{2i/d}"
        r"\right)"
    )
    (heat,) = build("pe.formula", ctx.source, ctx.theme, n_positions=n)
    show_view(heat, "pe_heat")
    dims = st.multiselect("Dimensions to plot", list(range(d)), key="pe_dims")
    try:
        (curves,) = build("pe.curves", ctx.source, ctx.theme, n_positions=n, dims=tuple(dims))
        show_view(curves, "pe_curves")
    except ViewUnavailableError as exc:
        unavailable(exc)
    (sim,) = build("pe.similarity", ctx.source, ctx.theme, n_positions=n)
    show_view(sim, "pe_sim")

with tab_model:
    st.markdown(f"**{ctx.model_name}** uses **{cfg.positional}** positions.")
    try:
        show_views(build("pe.model", ctx.source, ctx.theme), "pe_model")
    except ViewUnavailableError as exc:
        unavailable(exc)
    if cfg.positional == "rope":
        st.caption("RoPE rotates q and k instead of adding a vector, so q·k depends only on their distance.")

with tab_perm:
    st.markdown(
        "Shuffle the ordinary tokens, run both orders, then undo the shuffle on the second pattern. "
        "**Without positions** attention is permutation-equivariant: the two agree exactly. **With "
        "positions** they do not."
    )
    layer, head = layer_head_picker(obs.n_layers, obs.n_heads, prefix="perm_")
    positions = st.toggle("Positional encoding on", key="perm_positions")
    seed = int(st.number_input("Shuffle seed", 0, 1000, key="perm_seed"))
    show_views(build("perm", ctx.source, ctx.theme, layer=layer, head=head, positions_on=positions, seed=seed), "perm")
    diff = float(ctx.source.permutation(seed, positions, layer)["max_diff"])
    if positions and cfg.positional != "none":
        st.warning(f"Positions on: the un-shuffled pattern differs from the original by up to {diff:.3f}.")
    else:
        st.success(f"Positions off: the un-shuffled pattern equals the original (largest difference {diff:.1e}).")
