"""Positional encodings: the sinusoidal formula, the model's real encoding, and the permutation lab."""

import streamlit as st

from viz.settings import PE_SECTIONS
from viz.shell.context import page_context
from viz.shell.services import views
from viz.shell.widgets import layer_head_picker, section, show_view, show_views, unavailable
from viz.views import ViewUnavailableError
from viz.views.lessons import MAX_TABLE_ROWS

ctx = page_context()
obs = ctx.obs
cfg = ctx.loaded.model.cfg
st.title("Positional encodings")
part = section("pe_section", PE_SECTIONS)

if part == PE_SECTIONS[0]:
    d = cfg.d_model - cfg.d_model % 2  # the formula needs an even width
    top = max(512, min(cfg.max_seq_len, MAX_TABLE_ROWS))
    if st.session_state.get("pe_positions", 0) > top:  # a link's value for a longer model: this one's longest
        st.session_state["pe_positions"] = top
    n = st.slider("Positions", 16, top, step=16, key="pe_positions")
    st.latex(
        r"PE_{(pos,2i)} = \sin\left(pos / 10000^{2i/d}\right),\quad PE_{(pos,2i+1)} = \cos\left(pos / 10000^{2i/d}"
        r"\right)"
    )
    (heat,) = views(ctx, "pe.formula", n_positions=n)
    show_view(heat, "pe_heat")
    dims = st.multiselect(
        "Dimensions to plot",
        list(range(d)),
        key="pe_dims",
        help="Empty: four dimensions whose wavelengths spread from the fastest to the slowest visible.",
    )
    try:
        (curves,) = views(ctx, "pe.curves", n_positions=n, dims=tuple(dims))
        show_view(curves, "pe_curves")
    except ViewUnavailableError as exc:
        unavailable(exc)
    (sim,) = views(ctx, "pe.similarity", n_positions=n)
    show_view(sim, "pe_sim")
    st.caption(
        "Position need not be added to the embeddings at all. Relative-position encoders put it inside the scores: "
        "T5 and MPNet add a learned number per head and distance, DeBERTa adds content→position and "
        "position→content terms of their own. Open such a model (a folder, or all-mpnet-base-v2 in the sidebar): "
        "**This model's encoding** then splits its scores into the parts that make them."
    )

elif part == PE_SECTIONS[1]:
    inside = "disentangled" if cfg.disentangled else "bias" if cfg.relative_bias else ""
    if inside and cfg.positional == "none":
        st.markdown(f"**{ctx.model_name}** adds no position to its embeddings: order enters inside the scores.")
    else:
        st.markdown(f"**{ctx.model_name}** uses **{cfg.positional}** positions.")
        try:
            show_views(views(ctx, "pe.model"), "pe_model")
        except ViewUnavailableError as exc:
            unavailable(exc)
    if cfg.positional == "rope":
        st.caption("RoPE rotates q and k instead of adding a vector, so q·k depends only on their distance.")
    if inside:
        st.subheader("Position inside the scores")
        said = {"c2p": "**content→position** (the query against the key's relative distance)",
                "p2c": "**position→content** (the key against the query's relative distance)"}  # fmt: skip
        terms = " plus ".join(said[t] for t in ("c2p", "p2c") if t in cfg.disentangled)
        st.markdown(
            f"Each score is **content→content** (q·k) plus {terms}, all scaled by "
            f"1/√({1 + len(cfg.disentangled)}·d_k): position enters attention as terms of its own, not as a vector "
            "added to the embeddings."
            if inside == "disentangled"
            else "Each score is q·k plus a **learned number per head and relative distance** (key − query), the same "
            "in every layer: position enters attention only through this bias."
        )
        layer, head = layer_head_picker(obs.n_layers, obs.n_heads, prefix="rel_")
        query = st.selectbox(
            "Query (the token whose row is split)",
            list(range(obs.n_tokens)),
            format_func=lambda i: f"{i}: {obs.tokens[i]}",
            key="rel_query",
        )
        key = "pe.split" if inside == "disentangled" else "pe.bias"
        show_views(views(ctx, key, layer=layer, head=head, query=int(query)), "pe_inside")

else:
    st.markdown(
        "Shuffle the ordinary tokens, run both orders, then undo the shuffle on the second pattern. "
        "**Without positions** attention is permutation-equivariant: the two agree exactly. **With "
        "positions** they do not."
        + (
            " **A causal mask** tells the orders apart by itself (each token sees only the ones before it): here it "
            "is on, so the two differ even without positions — lift it in *Attention options* to see them agree."
            if obs.causal
            else ""
        )
    )
    layer, head = layer_head_picker(obs.n_layers, obs.n_heads, prefix="perm_")
    positions = st.toggle("Positional encoding on", key="perm_positions")
    seed = int(st.number_input("Shuffle seed", 0, 1000, key="perm_seed"))
    show_views(views(ctx, "perm", layer=layer, head=head, positions_on=positions, seed=seed), "perm")
