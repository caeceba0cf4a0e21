"""Compare: two heads, one head on two texts, or one text through two models — with the difference."""

import numpy as np
import streamlit as st

from model.catalog import ModelSpec, available
from model.errors import CheckpointError
from viz.figures import attention_heatmap, difference_heatmap
from viz.pages.common import analysis_for, ctx, layer_head_picker, show_chart

c = ctx()
a = c.analysis
st.title("Compare")
mode = st.radio("Compare", ["two heads", "two texts", "two models"], horizontal=True, key="cmp_mode")
hide = c.hide_special


def view(an, layer, head):
    keep = an.keep(hide)
    return an.patterns[layer, head][np.ix_(keep, keep)], [an.tokens[i] for i in keep]


st.session_state.setdefault("cmpB_head", min(1, a.n_heads - 1))  # B starts on another head than A
left, right = st.columns(2)
with left:
    st.markdown("**A**")
    la, ha = layer_head_picker(c, prefix="cmpA_")
if mode == "two heads":
    an_b, name_b = a, c.model_name()
    with right:
        st.markdown("**B**")
        lb, hb = layer_head_picker(c, prefix="cmpB_")
    title_a, title_b = f"A: layer {la}, head {ha}", f"B: layer {lb}, head {hb}"
elif mode == "two texts":
    st.session_state.setdefault("cmp_text_b", "The dog sat on the log.")
    with right:
        st.markdown("**B** (same layer and head, another text)")
        text_b = st.text_area("Text B", key="cmp_text_b", height=80)
    an_b, _ = analysis_for(c, text=text_b)
    lb, hb = la, ha
    title_a, title_b = f"A: “{a.text[:40]}”", f"B: “{text_b[:40]}”"
else:
    choices = [k for k in ("random", "bundled", "minilm") if available(k)[0]]
    cfg = c.loaded.model.cfg
    with right:
        st.markdown("**B** (same text, another model)")
        kind_b = st.selectbox(
            "Model B",
            choices,
            key="cmp_model_b",
            format_func=lambda k: {
                "random": "random init, same size as A",
                "bundled": "bundled trained model",
                "minilm": "all-MiniLM-L6-v2",
            }[k],
        )
        seed_b = st.number_input("Seed (random init)", 0, 10_000, 1, key="cmp_seed_b") if kind_b == "random" else 0
    spec_b = (
        ModelSpec(
            "random",
            n_layers=cfg.n_layers,
            n_heads=cfg.n_heads,
            d_model=cfg.d_model,
            seed=int(seed_b),
            positional=cfg.positional if cfg.positional != "learned" else "sinusoidal",
        )
        if kind_b == "random"
        else ModelSpec(kind_b)
    )
    try:
        an_b, loaded_b = analysis_for(c, spec=spec_b)
    except (CheckpointError, ValueError) as exc:
        st.error(f"Model B could not be used: {exc}")
        st.stop()
    name_b = loaded_b.description["name"]
    with right:
        lb, hb = (
            layer_head_picker(c, prefix="cmpB_")
            if an_b.n_layers == a.n_layers and an_b.n_heads == a.n_heads
            else (0, 0)
        )
        lb, hb = min(lb, an_b.n_layers - 1), min(hb, an_b.n_heads - 1)
    title_a, title_b = f"A: {c.model_name()} L{la}H{ha}", f"B: {name_b} L{lb}H{hb}"

pa, ta = view(a, la, ha)
pb, tb = view(an_b, lb, hb)
zmax = float(max(pa.max(initial=0), pb.max(initial=0)))
with left:
    show_chart(attention_heatmap(pa, ta, title=title_a, zmax=zmax, theme=c.theme), "cmp_a", "compare", "A")
with right:
    show_chart(attention_heatmap(pb, tb, title=title_b, zmax=zmax, theme=c.theme), "cmp_b", "compare", "B")
st.subheader("Difference A − B")
if pa.shape == pb.shape and ta == tb:
    show_chart(
        difference_heatmap(pa, pb, ta, title="A − B (red: A attends more, blue: B attends more)", theme=c.theme),
        "cmp_diff",
        "compare",
        "difference",
    )
    st.caption(f"Largest absolute difference: {np.abs(pa - pb).max():.4f}; mean {np.abs(pa - pb).mean():.4f}.")
else:
    st.info(f"A and B have different tokens ({len(ta)} vs {len(tb)}), so a cell-by-cell difference has no meaning.")
