"""Beyond the weights: context mixing per layer, every method's answer for one token, sinks and head types."""

import streamlit as st

from model.analysis.gradients import ig_seconds, ig_steps, targets_for
from model.analysis.mixing import mixing_seconds
from model.analysis.sinks import first_target, present_targets
from viz.settings import MIXING_SECTIONS
from viz.shell.components import token_strip
from viz.shell.context import page_context
from viz.shell.longrun import whole_section
from viz.shell.services import views
from viz.shell.widgets import ask_once, follow_open_page, open_clicked, section, show_view, show_views
from viz.views.mixing import MAX_ZEROING_TOKENS, TARGET_NAMES

follow_open_page()
ctx = page_context()
obs = ctx.obs
st.title("Beyond the weights")
st.caption(
    "Attention weights say where a head looks, not what it moves. Norm-based attention weighs each weight by the "
    "size of what the key sends, ‖α·f(x)‖ (Kobayashi et al., 2020); ALTI adds the residual and the LayerNorm "
    "(Ferrando et al., 2022); value zeroing removes one token's value and measures how much each output changes "
    "(Mohebbi et al., 2023); gradients ask which inputs an output depends on (Sundararajan et al., 2017)."
)
token_strip(obs.tokens, obs.special)
part = section("mix_section", MIXING_SECTIONS)
if obs.n_tokens > MAX_ZEROING_TOKENS and part != "Sinks and head types":
    st.info(
        f"Value zeroing recomputes every layer once per token; it is left out above {MAX_ZEROING_TOKENS} tokens "
        f"(this text has {obs.n_tokens}). The other methods are shown."
    )

ASK_ABOVE_S = 2.0  # a measurement expected to take longer waits for the button, with its estimate
zeroing = obs.n_tokens <= MAX_ZEROING_TOKENS
estimate = mixing_seconds(ctx.loaded.model.cfg, obs.n_tokens, zeroing)
gradients = part == "Compare methods"  # integrated gradients too: their first intervals, then more if they must
least, most = ig_seconds(ctx.loaded.model.cfg, obs.n_tokens) if gradients else (0.0, 0.0)
if part != "Sinks and head types" and ctx.device == "cpu" and estimate + least > ASK_ABOVE_S:
    methods = "norm-based, ALTI" + (" and value zeroing" if zeroing else "")
    also = (
        f", and integrated gradients (from {max(1, ig_steps(obs.n_tokens) // 4)} to {ig_steps(obs.n_tokens)} "
        "forward and backward passes: more where the output moves steeply along the path)"
    ) * gradients
    span = f"{estimate + least:.0f}–{estimate + most:.0f}" if round(most) > round(least) else f"{estimate + most:.0f}"
    ask_once(
        (ctx.spec, ctx.device, obs.text, ctx.options), "_asked_mixing",
        f"Measuring context mixing ({methods}){also} on this text takes about {span} s on this server's CPU "
        f"({obs.n_layers} layers × {obs.n_tokens} tokens; it grows with the square of the length), so it waits for "
        "the button. Once measured it is kept for every page and user. *Sinks and head types* needs none of it.",
        f"Measure it (about {span} s)", "mix_run",
    )  # fmt: skip

if part == "Context mixing":
    cols = st.columns(2)
    layer = cols[0].selectbox("Layer", range(obs.n_layers), key="layer")
    across = cols[1].toggle(
        "Through the layers up to this one",
        key="mix_across",
        help="Multiply the per-layer matrices as rollout does (ALTI and value zeroing are aggregated this way in "
        "their papers).",
    )
    (fig,) = views(ctx, "mixing", layer=int(layer), across=bool(across))
    show_view(fig, "mix_layer")
    st.subheader(f"Norm-based attention of every head of layer {layer}")
    (heads,) = views(ctx, "mixing.heads", layer=int(layer))
    show_view(heads, "mix_heads")
elif part == "Compare methods":
    offered = targets_for(ctx.loaded.model)
    if st.session_state["mix_target"] not in offered:
        st.session_state["mix_target"] = offered[0]
    cols = st.columns(2)
    ordinary = [i for i in range(obs.n_tokens) if not obs.special[i]] or list(range(obs.n_tokens))
    focus = st.session_state["focus_query"]
    query = cols[0].selectbox(
        "Token",
        ordinary,
        index=ordinary.index(focus) if focus in ordinary else (len(ordinary) - 1 if obs.causal else 0),
        format_func=lambda i: f"{i}: {obs.tokens[i]}",
        help="The token whose sources every method ranks (the query in focus on the other pages).",
    )
    target = cols[1].selectbox("Gradients of", offered, key="mix_target", format_func=lambda t: TARGET_NAMES[t])
    show_views(views(ctx, "mixing.compare", query=int(query), target=target), "mix_cmp")
else:
    # a long text: every token read whole, as the sink lesson and the head gallery read it (one number per head)
    long = whole_section(ctx)  # a long text: over all its tokens
    tokens, special = (long.tokens, long.special) if long is not None else (obs.tokens, obs.special)
    offered = present_targets(tokens, special)  # a decoder's text has no [CLS] or [SEP] to weigh
    if st.session_state.get("mix_sink") not in offered:
        st.session_state["mix_sink"] = first_target(tokens, special, obs.causal)
    target = st.segmented_control("Sink target", offered, key="mix_sink") or offered[0]
    share, types = views(ctx, "sinks", sink=target)
    show_view(share, "sink_share", on_select=lambda: open_clicked("sink_share"), selection_mode="points")
    show_view(types, "sink_types", on_select=lambda: open_clicked("sink_types"), selection_mode="points")
    st.caption(
        "Click a head to open it on the attention map (its “renormalise without the sink” switch shows "
        "where the rest of its weight goes)."
    )
