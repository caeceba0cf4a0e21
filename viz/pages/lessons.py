"""Lessons, live: why √d_k, heads specialise, ablation, masked-token predictions."""

import pandas as pd
import streamlit as st

from model.analysis.metrics import METRICS
from model.io.catalog import ModelSpec
from model.observe import Options
from viz.shell.context import page_context
from viz.shell.widgets import head_label, show_view, show_views, unavailable
from viz.views import ViewUnavailableError, build
from viz.views.lessons import mask_positions

ctx = page_context()
obs, src = ctx.obs, ctx.source
st.title("Lessons")
tab_scale, tab_spec, tab_ablate, tab_mlm = st.tabs(["Why √d_k", "Heads specialise", "Ablation", "Masked tokens"])

with tab_scale:
    st.markdown(
        "Dot products of random d_k-dimensional vectors grow like √d_k. Without the division the "
        "softmax saturates: one key takes all the weight and the gradient vanishes."
    )
    (fig,) = build("lesson.scaling", src, ctx.theme)
    show_view(fig, "lesson_scale")
    unscaled, _ = src.other(options=Options(causal=ctx.options.causal, scale=False))
    scaled, _ = src.other(options=Options(causal=ctx.options.causal, scale=True))
    st.markdown(f"**On {ctx.model_name}** (d_k = {ctx.loaded.model.cfg.d_k}), this text:")
    cols = st.columns(2)
    cols[0].metric("mean attention entropy, ÷√d_k", f"{scaled.metrics['entropy'].mean():.3f} nats")
    cols[1].metric(
        "same weights, no scaling",
        f"{unscaled.metrics['entropy'].mean():.3f} nats",
        delta=f"{unscaled.metrics['entropy'].mean() - scaled.metrics['entropy'].mean():+.3f}",
    )
    cols[0].metric("mean largest weight, ÷√d_k", f"{scaled.metrics['max_weight'].mean():.3f}")
    cols[1].metric("no scaling", f"{unscaled.metrics['max_weight'].mean():.3f}")

with tab_spec:
    st.markdown(
        "Training makes heads differ: some look at the previous token, some at [CLS]/[SEP], some "
        "spread out. A random init of the same config has none of this."
    )
    metric = st.selectbox("Metric", METRICS, key="lesson_metric")
    (fig,) = build("lesson.spread", src, ctx.theme, metric=metric)
    show_view(fig, "lesson_spread")
    rnd, _ = src.other(spec=ModelSpec("reinit", base=ctx.spec, seed=0))
    rows = [
        {"model": name, **{m: float(side.metrics[m].std()) for m in METRICS}}
        for name, side in ((ctx.model_name, obs), ("random init", rnd))
    ]
    st.caption("Spread (standard deviation across heads) of each metric:")
    st.dataframe(pd.DataFrame(rows), hide_index=True, key="lesson_spread_table")

with tab_ablate:
    every_head = [(layer, head) for layer in range(obs.n_layers) for head in range(obs.n_heads)]
    ablate = tuple(st.multiselect("Switch off heads", every_head, key="ablate_heads", format_func=head_label))
    (fig,) = build("lesson.ablation", src, ctx.theme, ablate=ablate)
    show_view(fig, "ablate_change")
    change = fig.figure.data[0].y
    st.caption(f"Mean relative change of the final hidden states: {sum(change) / len(change):.3f}.")
    if ctx.loaded.has_mlm and ablate:
        positions, _ = mask_positions(src)
        if positions:
            st.markdown(f"Predictions at position {positions[0]} (masked), before → after ablation:")
            show_views(build("lesson.ablation_predictions", src, ctx.theme, ablate=ablate), "ablate", columns=2)

with tab_mlm:
    ordinary = [i for i in range(len(obs.ids)) if not obs.special[i]]
    positions, typed = mask_positions(src)
    try:
        if ctx.loaded.has_mlm and typed:
            st.markdown(f"Your text has {len(positions)} mask token(s).")
            pick = -1
        elif ctx.loaded.has_mlm and ordinary:
            pick = st.selectbox(
                "Mask this token", ordinary, key="mlm_pick", format_func=lambda i: f"{i}: {obs.tokens[i]}"
            )
        else:
            pick = -1
        predictions = build("lesson.mlm", src, ctx.theme, pick=pick)
        show_views(predictions, "mlm", columns=min(3, len(predictions)))
    except ViewUnavailableError as exc:
        unavailable(exc)
