"""Compare: two heads, one head on two texts, or one text through two models — with the difference."""

import numpy as np
import streamlit as st

from model.errors import CheckpointError
from model.io.catalog import ModelSpec, available, random_like
from viz.figures import attention_heatmap, difference_heatmap
from viz.settings import COMPARE_MODELS
from viz.shell.context import page_context
from viz.shell.services import other_observation
from viz.shell.widgets import layer_head_picker, show_chart

MODEL_B_LABELS = {
    "random": "random init, same size as A",
    "bundled": "bundled trained model",
    "minilm": "all-MiniLM-L6-v2",
}

ctx = page_context()
obs = ctx.obs
st.title("Compare")
mode = st.radio("Compare", ["two heads", "two texts", "two models"], horizontal=True, key="cmp_mode")
left, right = st.columns(2)
with left:
    st.markdown("**A**")
    layer_a, head_a = layer_head_picker(obs.n_layers, obs.n_heads, prefix="cmpA_")
if mode == "two heads":
    obs_b = obs
    with right:
        st.markdown("**B**")
        layer_b, head_b = layer_head_picker(obs.n_layers, obs.n_heads, prefix="cmpB_")
    title_a, title_b = f"A: layer {layer_a}, head {head_a}", f"B: layer {layer_b}, head {head_b}"
elif mode == "two texts":
    with right:
        st.markdown("**B** (same layer and head, another text)")
        text_b = st.text_area("Text B", key="cmp_text_b", height=80)
    obs_b, _ = other_observation(ctx, text=text_b)
    layer_b, head_b = layer_a, head_a
    title_a, title_b = f"A: “{obs.text[:40]}”", f"B: “{text_b[:40]}”"
else:
    choices = [k for k in COMPARE_MODELS if available(k)[0]]
    with right:
        st.markdown("**B** (same text, another model)")
        kind_b = st.selectbox("Model B", choices, key="cmp_model_b", format_func=MODEL_B_LABELS.get)
        seed_b = st.number_input("Seed (random init)", 0, 10_000, key="cmp_seed_b") if kind_b == "random" else 0
    spec_b = random_like(ctx.loaded.model.cfg, int(seed_b)) if kind_b == "random" else ModelSpec(kind_b)
    try:
        obs_b, loaded_b = other_observation(ctx, spec=spec_b)
    except (CheckpointError, ValueError) as exc:
        st.error(f"Model B could not be used: {exc}")
        st.stop()
    with right:
        same_shape = obs_b.n_layers == obs.n_layers and obs_b.n_heads == obs.n_heads
        layer_b, head_b = layer_head_picker(obs.n_layers, obs.n_heads, prefix="cmpB_") if same_shape else (0, 0)
        layer_b, head_b = min(layer_b, obs_b.n_layers - 1), min(head_b, obs_b.n_heads - 1)
    title_a, title_b = f"A: {ctx.model_name} L{layer_a}H{head_a}", f"B: {loaded_b.name} L{layer_b}H{head_b}"
pattern_a, tokens_a = obs.shown(obs.patterns[layer_a, head_a], ctx.hide_special), ctx.tokens
pattern_b = obs_b.shown(obs_b.patterns[layer_b, head_b], ctx.hide_special)
tokens_b = obs_b.shown_tokens(ctx.hide_special)
zmax = float(max(pattern_a.max(initial=0), pattern_b.max(initial=0)))
with left:
    show_chart(
        attention_heatmap(pattern_a, tokens_a, title=title_a, zmax=zmax, theme=ctx.theme), "cmp_a", "compare", "A"
    )
with right:
    show_chart(
        attention_heatmap(pattern_b, tokens_b, title=title_b, zmax=zmax, theme=ctx.theme), "cmp_b", "compare", "B"
    )
st.subheader("Difference A − B")
if pattern_a.shape == pattern_b.shape and tokens_a == tokens_b:
    show_chart(
        difference_heatmap(
            pattern_a, pattern_b, tokens_a, title="A − B (red: A attends more, blue: B attends more)", theme=ctx.theme
        ),
        "cmp_diff",
        "compare",
        "difference",
    )
    gap = np.abs(pattern_a - pattern_b)
    st.caption(f"Largest absolute difference: {gap.max():.4f}; mean {gap.mean():.4f}.")
else:
    st.info(
        f"A and B have different tokens ({len(tokens_a)} vs {len(tokens_b)}), so a cell-by-cell difference has no "
        "meaning."
    )
