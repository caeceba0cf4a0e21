"""Lessons, live: why √d_k, heads specialise, ablation, masked-token predictions, attention sinks, induction
heads, grouped K/V heads and a needle in a long haystack."""

from dataclasses import replace

import numpy as np
import streamlit as st

from model.analysis.decoder import strongest_sink
from model.analysis.long_heads import long_sink_mass
from model.analysis.metrics import METRIC_HELP, METRICS
from model.io.bert import model_note
from viz.settings import LESSON_SECTIONS
from viz.shell.choices import LEAN_ABOVE_HEADS
from viz.shell.context import page_context
from viz.shell.longrun import whole_section
from viz.shell.needle import needle_section
from viz.shell.services import views
from viz.shell.widgets import (
    as_built_note,
    follow_open_page,
    head_label,
    layer_head_picker,
    open_clicked,
    open_page,
    plain,
    section,
    show_view,
    show_views,
    unavailable,
)
from viz.views import ViewUnavailableError
from viz.views.lessons import mask_positions
from viz.views.wordpieces import split_note

follow_open_page()
ctx = page_context()
obs, src = ctx.obs, ctx.source
st.title("Lessons")
part = section("lesson_section", LESSON_SECTIONS)


def show_scaling_metrics(scaled: dict, unscaled: dict) -> None:
    cols = st.columns(2)
    cols[0].metric("mean attention entropy, ÷√d_k", f"{scaled['entropy'].mean():.3f} nats")
    cols[1].metric(
        "same weights, no scaling",
        f"{unscaled['entropy'].mean():.3f} nats",
        delta=f"{unscaled['entropy'].mean() - scaled['entropy'].mean():+.3f}",
    )
    cols[0].metric("mean largest weight, ÷√d_k", f"{scaled['max_weight'].mean():.3f}")
    cols[1].metric("no scaling", f"{unscaled['max_weight'].mean():.3f}")


BIG = ctx.loaded.model.cfg.n_layers * ctx.loaded.model.cfg.n_heads > LEAN_ABOVE_HEADS


def on_request(key: str, what: str, asked) -> bool:
    """Whether to run an extra forward pass now: at once on small models; on a big one (SmolLM2: 1–4 s at 512
    tokens) only once the reader asks, for this exact request (``asked``), which is then kept."""
    if not BIG or st.session_state.get(f"_asked_{key}") == asked:
        return True
    if st.button(f"Run it: {what}", key=key, icon=":material/play_arrow:"):
        st.session_state[f"_asked_{key}"] = asked
        return True
    st.caption(f"{ctx.model_name} is big: this runs the model once more on your text, so it waits for the button.")
    return False


def token_name(i: int) -> str:
    return f"{i}: {obs.tokens[i]}"


if part == "Predict first":
    st.markdown(
        "Guess before you look. Pick a head and a token: **which token will it attend to most?** Make your guess, "
        "then reveal the head's answer. (Rows of an attention map are the tokens that look; this is one row.)"
    )
    layer, head = layer_head_picker(obs.n_layers, obs.n_heads, prefix="predict_")
    c1, c2 = st.columns(2)
    positions = list(range(obs.n_tokens))
    query = c1.selectbox("The token that looks (query)", positions, format_func=token_name, key="predict_query")
    guess = c2.selectbox("Your guess: where it looks most", positions, format_func=token_name, key="predict_guess")
    asked = (ctx.model_name, obs.text, layer, head, query, guess)
    if st.button("Reveal", key="predict_reveal", type="primary", icon=":material/visibility:"):
        st.session_state["_predict_shown"] = asked
    if st.session_state.get("_predict_shown") == asked:
        (fig,) = views(ctx, "lesson.predict", layer=layer, head=head, query=query, guess=guess)
        show_view(fig, "predict_fig")
    else:
        st.caption("The answer stays hidden until you reveal it; change the head, the token or the guess to try again.")

elif part == "Why √d_k":
    st.markdown(
        "A dot product of two random d_k-dimensional vectors has a standard deviation of √d_k. Dividing the "
        "scores by √d_k keeps the softmax's input on the same scale whatever the head size; without it, large "
        "heads get a softmax that puts nearly all weight on one key, where its gradient is small."
    )
    (fig,) = views(ctx, "lesson.scaling")
    show_view(fig, "lesson_scale")
    st.markdown(f"**On {ctx.model_name}** (d_k = {ctx.loaded.model.cfg.d_k}), this text:")
    if on_request("run_unscaled", "the same text without ÷√d_k", (ctx.spec, obs.text, ctx.options)):
        unscaled = src.metrics(options=replace(ctx.options, scale=False))
        scaled = src.metrics(options=replace(ctx.options, scale=True))
        show_scaling_metrics(scaled, unscaled)

elif part == "Heads specialise":
    st.markdown(
        "Training gives heads jobs: one looks at the previous token, another parks its weight on [CLS] or the "
        "first token, another links the pieces of a word. Each head of this model is sorted into a kind on your "
        "text — and so is each head of a random init of the same config, which has never been trained."
    )
    if on_request("run_reinit", "a random init of the same config on this text", (ctx.spec, obs.text, ctx.options)):
        (fig,) = views(ctx, "lesson.kinds", query=st.session_state["focus_query"], key=st.session_state["focus_key"])
        show_view(fig, "lesson_kinds")
        try:
            (gallery,) = views(
                ctx, "heads.gallery", query=st.session_state["focus_query"], key=st.session_state["focus_key"]
            )
            show_view(
                gallery, "lesson_gallery", on_select=lambda: open_clicked("lesson_gallery"), selection_mode="points"
            )
        except ViewUnavailableError as exc:
            unavailable(exc)
        with st.expander("One metric per head, trained vs random init"):
            metric = st.selectbox("Metric", METRICS, key="lesson_metric")
            st.caption(plain(METRIC_HELP[metric]))
            (spread,) = views(ctx, "lesson.spread", metric=metric)
            show_view(spread, "lesson_spread")

elif part == "Pre- or post-norm":
    st.markdown(
        "The post's block is **pre-norm**: x + MHA(LN(x)), then x + FF(LN(x)). The norm sits on each branch and the "
        "stream x is never rescaled, so what a layer adds stays added. BERT (and MiniLM) are **post-norm**: "
        "LN(x + MHA(x)) — the norm sits on the stream and resets its size after every sublayer. Same text, both "
        "models: watch the top row."
    )
    if on_request("run_norms", "the bundled model and MiniLM on this text", (obs.text, ctx.options)):
        try:
            (fig,) = views(ctx, "lesson.norms")
            show_view(fig, "lesson_norms")
        except ViewUnavailableError as exc:
            unavailable(exc)
    st.page_link("viz/pages/block.py", label="Draw this model's block", icon=":material/stacks:")

elif part == "Ablation":
    every_head = [(layer, head) for layer in range(obs.n_layers) for head in range(obs.n_heads)]
    ablate = tuple(st.multiselect("Switch off heads", every_head, key="ablate_heads", format_func=head_label))
    if on_request("run_ablation", "the text with these heads off", (ctx.spec, obs.text, ctx.options, ablate)):
        (fig,) = views(ctx, "lesson.ablation", ablate=ablate)
        show_view(fig, "ablate_change")
    if ctx.loaded.has_mlm and ablate:
        positions, _ = mask_positions(src)
        if positions:
            st.markdown(f"Predictions at position {positions[0]} (masked), before → after ablation:")
            as_built_note(ctx, "These predictions run")
            show_views(views(ctx, "lesson.ablation_predictions", ablate=ablate), "ablate", columns=2)

elif part == "Attention sinks":
    st.markdown(
        "Many heads put most of their weight on the very first token, whatever it is. It is not a bug: softmax "
        "rows must sum to 1, so a head with nothing useful to read parks its weight on a token whose value moves "
        "little (Xiao et al., 2023, “attention sinks”). Encoders do the same with [CLS] and [SEP]."
    )
    long = whole_section(ctx)  # a long text: over all its tokens
    chosen = st.session_state.get("sink_layer", -1), st.session_state.get("sink_head", -1)
    if not (0 <= chosen[0] < obs.n_layers and 0 <= chosen[1] < obs.n_heads):  # first visit: the strongest sink
        mass = long_sink_mass(long) if long is not None else None
        where = np.unravel_index(int(np.argmax(mass)), mass.shape) if mass is not None else None
        st.session_state["sink_layer"], st.session_state["sink_head"] = (
            (int(where[0]), int(where[1])) if where is not None else strongest_sink(obs.patterns)
        )
    layer, head = layer_head_picker(obs.n_layers, obs.n_heads, prefix="sink_")
    grid, one, *given = views(ctx, "lesson.sinks", layer=layer, head=head)  # given: a learned sink (gpt-oss)
    show_view(grid, "sinks_grid", on_select=lambda: open_clicked("sinks_grid"), selection_mode="points")
    show_view(one, "sinks_head")
    for view in given:
        show_view(view, "sinks_given")

elif part == "Induction heads":
    st.markdown(
        "Show a model random tokens, then the same tokens again. From the second copy on, it can predict every "
        "next token by finding where the current token appeared before and copying what came after it. Heads "
        "that do this lookup are **induction heads** (Olsson et al., 2022): the mechanism behind in-context "
        "copying."
    )
    c1, c2 = st.columns(2)
    period = c1.slider("Random tokens per copy", 8, 64, key="ind_period")
    seed = c2.number_input("Seed", 0, 2**31 - 1, key="ind_seed")
    as_built_note(ctx, "This lesson runs")
    grid, top = views(ctx, "lesson.induction", period=int(period), seed=int(seed))
    show_view(grid, "ind_grid", on_select=lambda: open_clicked("ind_grid"), selection_mode="points")
    show_view(top, "ind_top", on_select=lambda: open_clicked("ind_top"), selection_mode="points")

    def use_sequence() -> None:
        st.session_state["text"] = src.induction(int(period), int(seed))["text"].strip()

    st.button(
        "Put the repeated sequence in the text box (then every page shows it)",
        key="ind_use",
        on_click=use_sequence,
        icon=":material/content_copy:",
    )
    st.markdown(
        "**How do they form?** Olsson et al. saw induction heads appear suddenly during training, with a bump in "
        "the loss. Train a two-layer model on this very task in about half a minute and scrub through the moment "
        "it happens."
    )

    def watch() -> None:
        st.session_state["learn_task"] = "induction"
        open_page("viz/pages/learn.py")

    st.button("Watch an induction head form", key="ind_watch", on_click=watch, icon=":material/model_training:")

elif part == "Needle in a haystack":
    as_built_note(ctx, "The needle runs")
    needle_section(ctx)

elif part == "Shared K/V (GQA)":
    st.markdown(
        "Grouped-query attention (Ainslie et al., 2023) lets several query heads share one key head and one value "
        "head: the KV cache a decoder keeps while generating shrinks by the group size. The heads of a group read "
        "the same keys and values but ask their own questions."
    )
    cfg = ctx.loaded.model.cfg
    if st.session_state.get("gqa_kv", 0) >= cfg.kv_heads:  # another model was loaded
        st.session_state["gqa_kv"] = 0
    c1, c2 = st.columns(2)
    layer = c1.selectbox("Layer", range(obs.n_layers), key="layer")
    kv = c2.selectbox(
        "Key/value head",
        range(cfg.kv_heads),
        key="gqa_kv",
        format_func=lambda g: f"{g} (query heads {g * cfg.group_size}–{(g + 1) * cfg.group_size - 1})",
    )
    try:
        show_views(views(ctx, "lesson.gqa", layer=int(layer), kv=int(kv)), "gqa")
    except ViewUnavailableError as exc:
        unavailable(exc)

else:
    st.caption(plain(split_note(obs.tokens, obs.special)))
    note = model_note(str(ctx.loaded.info.get("source", "")))
    if note:
        st.info(note)
    if ctx.loaded.has_mlm:
        as_built_note(ctx, "The guesses run")
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
        predictions = views(ctx, "lesson.mlm", pick=pick)
        show_views(predictions, "mlm", columns=min(3, len(predictions)))
    except ViewUnavailableError as exc:
        unavailable(exc)
