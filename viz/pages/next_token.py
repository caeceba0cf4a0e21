"""Next token: what a decoder predicts after each position, and generation step by step with the KV cache."""

import streamlit as st

from viz.shell.context import page_context
from viz.shell.longrun import WHOLE, long_observation, reads_whole
from viz.shell.services import views
from viz.shell.widgets import as_built_note, layer_head_picker, show_view, unavailable
from viz.views import ViewUnavailableError

ctx = page_context()
obs = ctx.obs
whole = reads_whole(ctx) and ctx.loaded.has_lm
st.title("Next token", help=f"Marked “{WHOLE}”: on a long text this page reads every token." if whole else None)
if not ctx.loaded.has_lm and ctx.spec.stack == "encoder":  # one stack of an encoder–decoder
    st.info(
        f"{ctx.model_name} reads the source and predicts nothing itself. Switch the sidebar's **Stack** to "
        "**Decoder** to see the decoder write its target token by token, reading this source."
    )
    st.stop()
if not ctx.loaded.has_lm:
    st.info(
        f"{ctx.model_name} has no next-token head: it is an encoder, which reads the whole text at once and "
        "fills in masked words (see Lessons → Masked tokens). Choose **SmolLM2-135M-Instruct** as the model "
        "source to see a decoder predict and generate."
    )
    st.stop()

st.caption(
    "A decoder reads left to right: at every position it gives a probability to every token of its vocabulary "
    "for what comes next. Temperature divides the scores before the softmax: below 1 sharpens, above 1 flattens."
)
long = long_observation(ctx) if whole else None
c1, c2 = st.columns(2)
if long is not None:  # thousands of positions: one by number
    position = c1.number_input(f"Predict after position (−1: the last of {long.n_tokens:,})", -1,
                               long.n_tokens - 1, key="next_position")  # fmt: skip
else:
    position = c1.selectbox(
        "Predict after",
        [-1, *range(obs.n_tokens)],
        format_func=lambda i: "the last token" if i < 0 else f"{i}: {obs.tokens[i]}",
        key="next_position",
    )
temperature = c2.slider("Temperature", 0.1, 2.0, step=0.1, key="next_temperature")
(fig,) = views(ctx, "next.predictions", position=int(position), temperature=float(temperature))
show_view(fig, "next_fig")

st.subheader("Generate, one token at a time")
st.caption(
    "Each new token needs only its own query, key and value: the keys and values of every earlier position are "
    "kept in the KV cache. Each row below is the attention row of the query that produced a token, for the "
    "chosen layer and head — watch where the model looks as it writes."
)
as_built_note(ctx, "Generation runs")
c1, c2, c3 = st.columns(3)
n_new = c1.slider("Tokens to generate", 1, 48, key="gen_n")
gen_temperature = c2.slider("Temperature (0 = always the most likely)", 0.0, 2.0, step=0.1, key="gen_temperature")
seed = c3.number_input("Seed (for sampling)", 0, 2**31 - 1, key="gen_seed")
layer, head = layer_head_picker(obs.n_layers, obs.n_heads)
request = (ctx.spec, obs.text, int(n_new), float(gen_temperature), int(seed))
if st.button("Generate", key="gen_go", type="primary", icon=":material/play_arrow:"):
    st.session_state["_gen_for"] = request


def append_generated() -> None:
    steps = ctx.source.generation(int(n_new), float(gen_temperature), int(seed))
    st.session_state["text"] = obs.text + ctx.loaded.tokenizer.inner.decode([s.token for s in steps])


if st.session_state.get("_gen_for") != request:  # generating runs the model once per new token: on request
    st.caption(f"Press Generate: {int(n_new)} forward passes of one token each, reusing the cached keys and values.")
else:
    try:
        (gen,) = views(
            ctx,
            "next.generation",
            n_new=int(n_new),
            temperature=float(gen_temperature),
            seed=int(seed),
            layer=layer,
            head=head,
        )
        show_view(gen, "gen_fig")
        st.button(
            "Append the generated text to my text", key="gen_append", on_click=append_generated, icon=":material/add:"
        )
    except ViewUnavailableError as exc:
        unavailable(exc)
