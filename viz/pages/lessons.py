"""Lessons, live: why √d_k, heads specialise, ablation, masked-token predictions."""

import numpy as np
import pandas as pd
import streamlit as st

from model.analysis import METRICS
from model.catalog import ModelSpec
from model.inside import scaling_demo
from model.mlm import masked_predictions
from model.pipeline import Options
from viz.figures import metric_spread
from viz.figures.inside import change_bars, prediction_bars, scaling_figure
from viz.pages.common import analysis_for, ctx, show_chart


@st.cache_data(show_spinner=False)
def cached_scaling_demo():
    return scaling_demo()


@st.cache_resource(max_entries=32, show_spinner="Predicting…")
def cached_predictions(spec, device, ids, positions, ablate, _model, _tokenizer):
    import torch

    return masked_predictions(
        _model, torch.tensor([list(ids)]), list(positions), _tokenizer.id_to_token, k=8, ablate=ablate
    )


c = ctx()
a = c.analysis
st.title("Lessons")
tab_scale, tab_spec, tab_ablate, tab_mlm = st.tabs(["Why √d_k", "Heads specialise", "Ablation", "Masked tokens"])

with tab_scale:
    st.markdown(
        "Dot products of random d_k-dimensional vectors grow like √d_k. Without the division the "
        "softmax saturates: one key takes all the weight and the gradient vanishes."
    )
    show_chart(scaling_figure(cached_scaling_demo(), theme=c.theme), "lesson_scale", "lessons", "sqrt-dk")
    unscaled, _ = analysis_for(c, options=Options(causal=c.options.causal, scale=False))
    scaled, _ = analysis_for(c, options=Options(causal=c.options.causal, scale=True))
    st.markdown(f"**On {c.model_name()}** (d_k = {c.loaded.model.cfg.d_k}), this text:")
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
    reinit = ModelSpec("reinit", base=c.spec, seed=0)
    rnd, _ = analysis_for(c, spec=reinit)
    metric = st.selectbox("Metric", METRICS, index=METRICS.index("previous"), key="lesson_metric")
    show_chart(
        metric_spread(
            {c.model_name(): a.metrics[metric], "random init, same config": rnd.metrics[metric]},
            metric,
            title=f"{metric} per head",
            theme=c.theme,
        ),
        "lesson_spread",
        "lessons",
        metric,
    )
    rows = [
        {"model": name, **{m: float(an.metrics[m].std()) for m in METRICS}}
        for name, an in ((c.model_name(), a), ("random init", rnd))
    ]
    st.caption("Spread (standard deviation across heads) of each metric:")
    st.dataframe(pd.DataFrame(rows), hide_index=True, key="lesson_spread_table")

heads = [f"L{lay}H{h}" for lay in range(a.n_layers) for h in range(a.n_heads)]
with tab_ablate:
    chosen = st.multiselect("Switch off heads", heads, key="ablate_heads", default=heads[:1])
    ablate = tuple((int(x[1:].split("H")[0]), int(x.split("H")[1])) for x in chosen)
    ab, _ = analysis_for(c, options=Options(causal=c.options.causal, scale=c.options.scale, ablate=ablate))
    change = np.linalg.norm(ab.hidden - a.hidden, axis=-1) / np.maximum(np.linalg.norm(a.hidden, axis=-1), 1e-12)
    show_chart(
        change_bars(a.tokens, change, title=f"Output change with {len(ablate)} head(s) off", theme=c.theme),
        "ablate_change",
        "lessons",
        "ablation",
    )
    st.caption(f"Mean relative change of the final hidden states: {change.mean():.3f}.")
    if c.loaded.has_mlm and ablate:
        mask_id = c.loaded.tokenizer.token_id(c.loaded.tokenizer.mask_token or "[MASK]")
        pos = [i for i, t in enumerate(a.ids) if t == mask_id] or [i for i in range(len(a.ids)) if not a.special[i]][:1]
        if pos:
            ids = list(a.ids)
            for p in pos:
                ids[p] = mask_id
            st.markdown(f"Predictions at position {pos[0]} (masked), before → after ablation:")
            for col, (off, title, part) in zip(
                st.columns(2), (((), "all heads", "before"), (ablate, "heads off", "after"))
            ):
                (pred, *_) = cached_predictions(
                    c.spec, c.device, tuple(ids), tuple(pos), off, c.loaded.model, c.loaded.tokenizer
                )
                with col:
                    show_chart(
                        prediction_bars(pred.tokens, pred.probs, title=title, theme=c.theme),
                        f"ablate_{part}",
                        "lessons",
                        part,
                    )

with tab_mlm:
    if not c.loaded.has_mlm:
        st.info(f"{c.model_name()} has no masked-language-model head; the bundled model has one.")
    else:
        tok = c.loaded.tokenizer
        mask_token = tok.mask_token or "[MASK]"
        mask_id = tok.token_id(mask_token)
        typed = [i for i, t in enumerate(a.ids) if t == mask_id]
        if typed:
            st.markdown(f"Your text has {len(typed)} `{mask_token}` token(s).")
            positions = typed
        else:
            choices = [i for i in range(len(a.ids)) if not a.special[i]]
            if not choices:
                st.info(f"Type some text (with `{mask_token}` where a word should be guessed).")
                st.stop()
            pick = st.selectbox("Mask this token", choices, key="mlm_pick", format_func=lambda i: f"{i}: {a.tokens[i]}")
            positions = [pick]
        ids = list(a.ids)
        for p in positions:
            ids[p] = mask_id
        preds = cached_predictions(c.spec, c.device, tuple(ids), tuple(positions), (), c.loaded.model, tok)
        cols = st.columns(min(3, len(preds)))
        for i, pred in enumerate(preds):
            with cols[i % len(cols)]:
                truth = "" if typed else f" (was “{a.tokens[pred.position]}”)"
                show_chart(
                    prediction_bars(pred.tokens, pred.probs, title=f"position {pred.position}{truth}", theme=c.theme),
                    f"mlm_{i}",
                    "lessons",
                    "mlm",
                    pred.position,
                )
