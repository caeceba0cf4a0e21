"""Masks: switch a causal mask on the loaded model; pad a batch of two texts."""

import numpy as np
import streamlit as st

from model.inside import padded_batch
from model.pipeline import Options
from viz.figures import attention_heatmap
from viz.figures.inside import change_bars, matrix_heatmap
from viz.pages.common import analysis_for, ctx, layer_head_picker, show_chart


@st.cache_resource(max_entries=16, show_spinner="Running a padded batch…")
def cached_padded(spec, device, ids_a, ids_b, layer, _model, pad_id):
    return padded_batch(_model, list(ids_a), list(ids_b), pad_id, layer)


c = ctx()
a = c.analysis
st.title("Masks")
layer, head = layer_head_picker(c)
built_causal = c.loaded.model.cfg.causal
st.subheader("Causal mask")
a, _ = analysis_for(c, options=Options(causal=None, scale=c.options.scale))  # as built
b, _ = analysis_for(c, options=Options(causal=not built_causal, scale=c.options.scale))
label_a = "causal (as built)" if built_causal else "bidirectional (as built)"
label_b = "bidirectional (mask lifted)" if built_causal else "causal mask switched on"
for col, (r, title, key, part) in zip(st.columns(2), ((a, label_a, "a", "built"), (b, label_b, "b", "toggled"))):
    with col:
        show_chart(
            attention_heatmap(r.patterns[layer, head], r.tokens, title=title, theme=c.theme),
            f"mask_{key}",
            "masks",
            f"L{layer}",
            f"H{head}",
            part,
        )
change = np.linalg.norm(b.hidden - a.hidden, axis=-1) / np.maximum(np.linalg.norm(a.hidden, axis=-1), 1e-12)
show_chart(
    change_bars(a.tokens, change, title="How much each token's output changes", theme=c.theme),
    "mask_change",
    "masks",
    "output-change",
)
st.caption(
    "With a causal mask the first token can only see itself, so early tokens change most when the model "
    "was trained to look both ways; the last token still sees everything."
)

st.subheader("Padding")
st.session_state.setdefault("pad_text_b", "A short one.")
text_b = st.text_input("Second text for the batch", key="pad_text_b")
tok = c.loaded.tokenizer
max_len = c.loaded.model.cfg.max_seq_len
ids_a = tuple(a.ids)
ids_b = tuple(tok.encode(text_b, max_len=max_len).ids)
res = cached_padded(c.spec, c.device, ids_a, ids_b, layer, c.loaded.model, tok.pad_id)
mask = res["attention_mask"].astype(bool)
n = mask.shape[1]
cols = st.columns(2)
for row, (col, ids) in enumerate(zip(cols, (ids_a, ids_b))):
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
                theme=c.theme,
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
