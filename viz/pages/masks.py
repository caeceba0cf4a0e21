"""Masks: switch a causal mask on the loaded model; pad a batch of two texts."""

import numpy as np
import streamlit as st

from model.analysis.norms import relative_change
from model.observe import Options
from viz.figures import attention_heatmap, change_bars, matrix_heatmap
from viz.shell.context import page_context
from viz.shell.services import get_padded_batch, other_observation
from viz.shell.widgets import layer_head_picker, show_chart

ctx = page_context()
obs = ctx.obs
st.title("Masks")
layer, head = layer_head_picker(obs.n_layers, obs.n_heads)
built_causal = ctx.loaded.model.cfg.causal
st.subheader("Causal mask")
as_built, _ = other_observation(ctx, options=Options(causal=None, scale=ctx.options.scale))
toggled, _ = other_observation(ctx, options=Options(causal=not built_causal, scale=ctx.options.scale))
label_built = "causal (as built)" if built_causal else "bidirectional (as built)"
label_toggled = "bidirectional (mask lifted)" if built_causal else "causal mask switched on"
sides = ((as_built, label_built, "a", "built"), (toggled, label_toggled, "b", "toggled"))
for col, (side, title, key, part) in zip(st.columns(2), sides):
    with col:
        show_chart(
            attention_heatmap(side.patterns[layer, head], side.tokens, title=title, theme=ctx.theme),
            f"mask_{key}",
            "masks",
            f"L{layer}",
            f"H{head}",
            part,
        )
change = relative_change(as_built.hidden, toggled.hidden)
show_chart(
    change_bars(as_built.tokens, change, title="How much each token's output changes", theme=ctx.theme),
    "mask_change",
    "masks",
    "output-change",
)
st.caption(
    "With a causal mask the first token can only see itself, so early tokens change most when the model "
    "was trained to look both ways; the last token still sees everything."
)
st.subheader("Padding")
text_b = st.text_input("Second text for the batch", key="pad_text_b")
tok = ctx.loaded.tokenizer
ids_a = tuple(obs.ids)
ids_b = tuple(tok.encode(text_b, max_len=ctx.loaded.model.cfg.max_seq_len).ids)
res = get_padded_batch(ctx.spec, ctx.device, ids_a, ids_b, layer, tok.pad_id, ctx.loaded.model)
mask = res["attention_mask"].astype(bool)
n = mask.shape[1]
for row, (col, ids) in enumerate(zip(st.columns(2), (ids_a, ids_b))):
    labels = [tok.id_to_token(i) for i in ids] + ["[PAD]"] * (n - len(ids))
    shown = np.where(mask[row][None, :], res["patterns"][row, head], -np.inf)
    with col:
        show_chart(
            matrix_heatmap(
                shown,
                labels,
                col_labels=labels,
                title=f"Text {'AB'[row]} in the batch (padded keys grey)",
                diverging=False,
                zmax=1.0,
                theme=ctx.theme,
                value_name="weight",
            ),
            f"pad_{row}",
            "masks",
            f"L{layer}",
            f"H{head}",
            "padding",
            "AB"[row],
        )
st.caption(
    f"Padded keys get exactly zero weight. The shorter text's real tokens come out the same as without "
    f"padding (largest difference {float(res['padding_effect']):.1e})."
)
