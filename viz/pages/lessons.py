"""Lessons, live: why √d_k, heads specialise, ablation, masked-token predictions."""

import pandas as pd
import streamlit as st

from model.analysis.metrics import METRICS
from model.analysis.norms import relative_change
from model.experiments import with_mask
from model.io.catalog import ModelSpec
from model.observe import Options
from viz.figures import change_bars, metric_spread, prediction_bars, scaling_figure
from viz.shell.context import page_context
from viz.shell.services import get_predictions, get_scaling_demo, other_observation
from viz.shell.widgets import head_label, show_chart

ctx = page_context()
obs = ctx.obs
st.title("Lessons")
tab_scale, tab_spec, tab_ablate, tab_mlm = st.tabs(["Why √d_k", "Heads specialise", "Ablation", "Masked tokens"])

with tab_scale:
    st.markdown(
        "Dot products of random d_k-dimensional vectors grow like √d_k. Without the division the "
        "softmax saturates: one key takes all the weight and the gradient vanishes."
    )
    show_chart(scaling_figure(get_scaling_demo(), theme=ctx.theme), "lesson_scale", "lessons", "sqrt-dk")
    unscaled, _ = other_observation(ctx, options=Options(causal=ctx.options.causal, scale=False))
    scaled, _ = other_observation(ctx, options=Options(causal=ctx.options.causal, scale=True))
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
    rnd, _ = other_observation(ctx, spec=ModelSpec("reinit", base=ctx.spec, seed=0))
    metric = st.selectbox("Metric", METRICS, key="lesson_metric")
    show_chart(
        metric_spread(
            {ctx.model_name: obs.metrics[metric], "random init, same config": rnd.metrics[metric]},
            metric,
            title=f"{metric} per head",
            theme=ctx.theme,
        ),
        "lesson_spread",
        "lessons",
        metric,
    )
    rows = [
        {"model": name, **{m: float(side.metrics[m].std()) for m in METRICS}}
        for name, side in ((ctx.model_name, obs), ("random init", rnd))
    ]
    st.caption("Spread (standard deviation across heads) of each metric:")
    st.dataframe(pd.DataFrame(rows), hide_index=True, key="lesson_spread_table")

every_head = [(layer, head) for layer in range(obs.n_layers) for head in range(obs.n_heads)]
tokenizer = ctx.loaded.tokenizer
mask_id = tokenizer.token_id(tokenizer.mask_token or "[MASK]")
typed_masks = [i for i, t in enumerate(obs.ids) if t == mask_id]
ordinary = [i for i in range(len(obs.ids)) if not obs.special[i]]
with tab_ablate:
    ablate = tuple(st.multiselect("Switch off heads", every_head, key="ablate_heads", format_func=head_label))
    ablated, _ = other_observation(
        ctx, options=Options(causal=ctx.options.causal, scale=ctx.options.scale, ablate=ablate)
    )
    change = relative_change(obs.hidden, ablated.hidden)
    show_chart(
        change_bars(obs.tokens, change, title=f"Output change with {len(ablate)} head(s) off", theme=ctx.theme),
        "ablate_change",
        "lessons",
        "ablation",
    )
    st.caption(f"Mean relative change of the final hidden states: {change.mean():.3f}.")
    positions = typed_masks or ordinary[:1]
    if ctx.loaded.has_mlm and ablate and positions:
        ids = with_mask(obs.ids, positions, mask_id)
        st.markdown(f"Predictions at position {positions[0]} (masked), before → after ablation:")
        for col, (off, title, part) in zip(
            st.columns(2), (((), "all heads", "before"), (ablate, "heads off", "after"))
        ):
            (prediction, *_) = get_predictions(ctx.spec, ctx.device, ids, tuple(positions), off, ctx.loaded)
            with col:
                show_chart(
                    prediction_bars(prediction.tokens, prediction.probs, title=title, theme=ctx.theme),
                    f"ablate_{part}",
                    "lessons",
                    part,
                )

with tab_mlm:
    mask_token = tokenizer.mask_token or "[MASK]"
    if not ctx.loaded.has_mlm:
        st.info(f"{ctx.model_name} has no masked-language-model head; the bundled model has one.")
    elif not typed_masks and not ordinary:
        st.info(f"Type some text (with `{mask_token}` where a word should be guessed).")
    else:
        if typed_masks:
            st.markdown(f"Your text has {len(typed_masks)} `{mask_token}` token(s).")
            positions = typed_masks
        else:
            pick = st.selectbox(
                "Mask this token", ordinary, key="mlm_pick", format_func=lambda i: f"{i}: {obs.tokens[i]}"
            )
            positions = [pick]
        ids = with_mask(obs.ids, positions, mask_id)
        predictions = get_predictions(ctx.spec, ctx.device, ids, tuple(positions), (), ctx.loaded)
        cols = st.columns(min(3, len(predictions)))
        for i, prediction in enumerate(predictions):
            with cols[i % len(cols)]:
                truth = "" if typed_masks else f" (was “{obs.tokens[prediction.position]}”)"
                show_chart(
                    prediction_bars(
                        prediction.tokens,
                        prediction.probs,
                        title=f"position {prediction.position}{truth}",
                        theme=ctx.theme,
                    ),
                    f"mlm_{i}",
                    "lessons",
                    "mlm",
                    prediction.position,
                )
