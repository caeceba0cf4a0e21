"""Compare: two heads, one head on two texts, or one text through two models — with the difference."""

import numpy as np
import streamlit as st

from model.errors import CheckpointError
from model.io.catalog import available
from viz.settings import COMPARE_MODELS, COMPARE_MODES
from viz.shell.context import page_context
from viz.shell.services import views
from viz.shell.widgets import layer_head_picker, show_view

MODEL_B_LABELS = {
    "random": "random init, same size as A",
    "bundled": "bundled trained model",
    "minilm": "all-MiniLM-L6-v2",
}

ctx = page_context()
obs = ctx.obs
st.title("Compare")
mode = st.radio("Compare", COMPARE_MODES, horizontal=True, key="cmp_mode")
left, right = st.columns(2)
with left:
    st.markdown("**A**")
    layer_a, head_a = layer_head_picker(obs.n_layers, obs.n_heads, prefix="cmpA_")
selection = {"layer_a": layer_a, "head_a": head_a}
with right:
    if mode == "two heads":
        key = "compare.heads"
        st.markdown("**B**")
        selection["layer_b"], selection["head_b"] = layer_head_picker(obs.n_layers, obs.n_heads, prefix="cmpB_")
    elif mode == "two texts":
        key = "compare.texts"
        st.markdown("**B** (same layer and head, another text)")
        selection = {"layer": layer_a, "head": head_a, "text_b": st.text_area("Text B", key="cmp_text_b", height=80)}
    else:
        key = "compare.models"
        st.markdown("**B** (same text, another model)")
        choices = [k for k in COMPARE_MODELS if available(k)[0]]
        selection["model_b"] = st.selectbox("Model B", choices, key="cmp_model_b", format_func=MODEL_B_LABELS.get)
        if selection["model_b"] == "random":
            selection["seed_b"] = int(st.number_input("Seed (random init)", 0, 10_000, key="cmp_seed_b"))
        selection["layer_b"], selection["head_b"] = layer_head_picker(obs.n_layers, obs.n_heads, prefix="cmpB_")
try:
    views = {v.key.rsplit(".", 1)[-1]: v for v in views(ctx, key, **selection)}
except (CheckpointError, ValueError) as exc:
    st.error(f"Model B could not be used: {exc}")
    st.stop()
show_view(views["AB"], "cmp_ab")
st.subheader("Difference A − B")
if "diff" in views:
    show_view(views["diff"], "cmp_diff")
    gap = np.abs(np.asarray(views["diff"].figure.data[0].z, dtype=float))
    st.caption(f"Largest absolute difference: {np.nanmax(gap):.4f}; mean {np.nanmean(gap):.4f}.")
else:
    rows_a, rows_b = (len(trace.y) for trace in views["AB"].figure.data[:2])
    st.info(f"A and B have different tokens ({rows_a} vs {rows_b}), so a cell-by-cell difference has no meaning.")
