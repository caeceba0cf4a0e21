"""Causes: which layers and heads produce the answer — the logit lens, direct logit attribution, activation
patching and a head's QK/OV circuits (model/analysis/lens.py, patching.py, circuits.py)."""

import time

import streamlit as st

from model.analysis.patching import patching_passes
from viz.settings import CAUSES_SECTIONS, PATCH_CHOICES, PATCH_SWEEPS
from viz.shell.context import page_context
from viz.shell.services import get_pass_seconds, views
from viz.shell.widgets import follow_open_page, layer_head_picker, open_head, section, show_view, unavailable
from viz.views import ViewUnavailableError
from viz.views.causes import answer_position
from viz.views.patching import SCORES, TEMPLATES, alignment, patch_metric, template

ASK_ABOVE_S = 2.0  # a sweep expected to take longer waits for the button, with its estimate
BATCHED = 0.3  # a patched run costs this share of a plain pass (one layer's runs go as one batch: 0.27–0.34 on SmolLM2)

follow_open_page()
ctx = page_context()
obs, loaded = ctx.obs, ctx.loaded
st.title("Causes")
st.caption(
    "Attention weights say where a head looks; these say which parts produce the answer. The **logit lens** reads "
    "the stream after every layer as if it were the last; **direct logit attribution** splits the answer's logit "
    "into what each head and feed-forward wrote; **patching** swaps one activation from a clean run into a "
    "corrupted one and measures how much of the answer comes back; a head's **circuits** are its QK and OV "
    "matrices. One call from a notebook each: see docs/research.md."
)


def open_clicked_head(key: str) -> None:
    """Callback: a clicked head cell opens that head on the attention map (the feed-forward column opens nothing)."""
    points = ((st.session_state.get(key) or {}).get("selection") or {}).get("points") or []
    for layer, head, *_ in [p["customdata"] for p in points if "customdata" in p][:1]:
        if head >= 0:
            open_head(layer, head)


def answer_inputs(foil_help: str) -> tuple[str, str]:
    c1, c2 = st.columns(2)
    answer = c1.text_input(
        "Answer token",
        key="causes_answer",
        placeholder="the model's top guess",
        help="A leading space is part of a word's token in SmolLM2: “ Mary”, not “Mary”. Empty: the model's guess.",
    )
    foil = c2.text_input("Against (foil)", key="causes_foil", placeholder="its second guess", help=foil_help)
    return answer, foil


part = section("causes_section", CAUSES_SECTIONS)
if part in ("Logit lens", "Attribution"):  # they read the answer where this text has it (patching: its prompts)
    try:
        answer_position(ctx.source)
    except ViewUnavailableError as exc:
        unavailable(exc)
        st.stop()
if part == "Logit lens":
    c1, c2 = st.columns(2)
    target = c1.text_input(
        "Follow this token", key="causes_answer", placeholder="the model's answer", help="Its rank, layer by layer."
    )
    window = c2.slider("Positions shown", 4, 32, key="causes_window")
    try:
        grid, rank = views(ctx, "causes.lens", target=target, window=int(window))
        show_view(grid, "lens_grid")
        show_view(rank, "lens_rank")
    except ViewUnavailableError as exc:
        unavailable(exc)

elif part == "Attribution":
    answer, foil = answer_inputs("The logit difference answer − foil cancels what both share. Empty: its second guess.")
    try:
        (fig,) = views(ctx, "causes.attribution", answer=answer, foil=foil)
        show_view(fig, "dla_grid", on_select=lambda: open_clicked_head("dla_grid"), selection_mode="points")
    except ViewUnavailableError as exc:
        unavailable(exc)

elif part == "Patching":
    mask = None if loaded.has_lm else loaded.tokenizer.mask_token
    c1, c2 = st.columns([3, 1])
    chosen = c1.selectbox("Template", list(TEMPLATES), key="causes_template_pick")

    def use_template() -> None:
        clean, corrupted, answer, foil = template(st.session_state["causes_template_pick"], mask)
        st.session_state.update(text=clean, causes_corrupted=corrupted, causes_answer=answer, causes_foil=foil)

    c2.button("Use it", key="causes_template", on_click=use_template, icon=":material/content_paste:")
    st.caption(f"Clean prompt (the text in the sidebar): “{obs.text}”")
    corrupted = st.text_input(
        "Corrupted prompt", key="causes_corrupted", help="The same number of tokens, with the answer changed."
    )
    answer, foil = answer_inputs("Empty: the corrupted prompt's top guess (the answer it changes to).")
    c1, c2 = st.columns(2)
    sweep = c1.radio("Patch", PATCH_CHOICES, key="causes_patch", horizontal=True)
    score = c2.radio(
        "Score by",
        SCORES,
        key="causes_score",
        horizontal=True,
        help="The logit difference answer − foil (what IOI studies use), or the answer's probability alone.",
    )
    kinds = PATCH_SWEEPS[sweep]
    if corrupted.strip():
        other = loaded.tokenizer.encode(corrupted, max_len=loaded.model.cfg.max_seq_len)
        st.caption(alignment(list(obs.tokens), [loaded.tokenizer.id_to_token(i) for i in other.ids]))
    try:
        ids, metric = patch_metric(ctx.source, corrupted, answer, foil, score)
    except ViewUnavailableError as exc:
        unavailable(exc)
        st.stop()
    cfg = loaded.model.cfg
    todo = ctx.source.patching_todo(tuple(ids), metric, kinds)  # the kinds nobody has run yet: only those cost
    passes = patching_passes(cfg.n_layers, obs.n_tokens, cfg.n_heads, todo)
    estimate = passes * BATCHED * get_pass_seconds(ctx.spec, ctx.device, obs.n_tokens, loaded.model)
    request = (ctx.spec, ctx.device, tuple(obs.ids), tuple(ids), metric, kinds)
    if todo and st.session_state.get("_patched") != request and estimate > ASK_ABOVE_S:
        kept = [k for k in kinds if k not in todo]
        st.info(
            f"This sweep runs the model about {passes:.0f} times ({cfg.n_layers} layers × {obs.n_tokens} positions "
            f"or {cfg.n_heads} heads): about {estimate:.0f} s here"
            + (f" ({', '.join(kept)} ran before and is kept)" if kept else "")
            + ". Once run it is kept for every user."
        )
        if not st.button(f"Patch (about {estimate:.0f} s)", key="causes_run", icon=":material/play_arrow:"):
            st.stop()
        bar = st.progress(0.0, text="Patching…")
        began = time.perf_counter()
        ctx.source.patching(tuple(ids), metric, kinds, progress=lambda f: bar.progress(f, text=f"Patching… {f:.0%}"))
        bar.empty()
        st.caption(f"Patched in {time.perf_counter() - began:.1f} s.")
    st.session_state["_patched"] = request
    try:
        for part_view in views(
            ctx, "causes.patching", corrupted=corrupted, answer=answer, foil=foil, kinds=tuple(kinds), score=score
        ):
            key = f"patch_{part_view.key.rsplit('.', 1)[-1]}"
            clickable = part_view.key.endswith(".z")
            select = {"on_select": lambda k=key: open_clicked_head(k), "selection_mode": "points"} if clickable else {}
            show_view(part_view, key, **select)
    except ViewUnavailableError as exc:
        unavailable(exc)

else:  # Circuits
    layer, head = layer_head_picker(obs.n_layers, obs.n_heads)
    try:
        (card,) = views(ctx, "causes.circuit", layer=layer, head=head)
        show_view(card, "circuit_card")
    except ViewUnavailableError as exc:
        unavailable(exc)
