"""Causes: which layers and heads produce the answer — the logit lens, direct logit attribution, activation
patching and a head's QK/OV circuits (model/analysis/lens.py, patching.py, circuits.py)."""

import time

import streamlit as st

from model.analysis.patching import patching_passes, reuses_prefix
from viz.settings import CAUSES_SECTIONS, CIRCUIT_EMBEDDINGS, PATCH_CHOICES, PATCH_METHODS, PATCH_SWEEPS, PATH_RECEIVERS
from viz.shell.context import page_context
from viz.shell.research import get_pass_seconds
from viz.shell.services import views
from viz.shell.widgets import (
    as_built_note,
    follow_open_page,
    layer_head_picker,
    open_head,
    section,
    show_view,
    unavailable,
)
from viz.views import ViewUnavailableError
from viz.views.causes import answer_position
from viz.views.composition import SIDES as COMPOSITION_SIDES
from viz.views.patching import SCORES, TEMPLATES, alignment, patch_metric, template
from viz.views.paths import receivers_of

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
    "corrupted one and measures how much of the answer comes back (**attribution patching** estimates every swap "
    "from one backward pass; **path patching** follows one head's effect along one path); a head's **circuits** "
    "are its QK and OV "
    "matrices. One call from a notebook each: see docs/research.md."
)
as_built_note(ctx, "Every measure on this page runs")


def open_clicked_head(key: str) -> None:
    """Callback: a clicked head cell opens that head on the attention map (the feed-forward column opens nothing)."""
    points = ((st.session_state.get(key) or {}).get("selection") or {}).get("points") or []
    for layer, head, *_ in [p["customdata"] for p in points if "customdata" in p][:1]:
        if head >= 0:
            open_head(layer, head)


def open_sender(key: str) -> None:
    """Callback: a clicked sender in the composition grid becomes the head the circuits show."""
    points = ((st.session_state.get(key) or {}).get("selection") or {}).get("points") or []
    for layer, head, *_ in [p["customdata"] for p in points if "customdata" in p][:1]:
        st.session_state.update(layer=int(layer), head=int(head))


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


def show_patch_views(key: str, **selection) -> None:
    """A patching view's grids, each head grid clickable (it opens the head), with the page's prompts and answer."""
    try:
        for part_view in views(
            ctx,
            key,
            corrupted=st.session_state.get("causes_corrupted", ""),
            answer=st.session_state.get("causes_answer", ""),
            foil=st.session_state.get("causes_foil", ""),
            score=st.session_state.get("causes_score", SCORES[0]),
            **selection,
        ):
            name = part_view.key.split(".", 2)[-1].replace(".", "_")
            widget = f"patch_{name}" if key == "causes.patching" else f"{key.split('.')[1]}_{name}"
            clickable = part_view.key.endswith((".z", ".paths"))
            select = (
                {"on_select": lambda k=widget: open_clicked_head(k), "selection_mode": "points"} if clickable else {}
            )
            show_view(part_view, widget, **select)
    except ViewUnavailableError as exc:
        unavailable(exc)


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
    method = st.radio("Method", PATCH_METHODS, key="causes_method", horizontal=True)
    c1, c2 = st.columns(2)
    if method == PATCH_METHODS[2]:
        receivers = c1.radio(
            "Paths to",
            PATH_RECEIVERS,
            key="causes_receivers",
            horizontal=True,
            help="The logits: each head's direct effect. Queries, keys or values: its effect through those heads' "
            "inputs alone (Wang et al.'s name movers read the subject inhibition heads' output through their queries).",
        )
        heads = c1.text_input(
            "Receiver heads",
            key="causes_receiver_heads",
            placeholder="L9H6, L9H9",
            disabled=receivers == "logits",
            help="The heads whose inputs the paths end in, e.g. the name movers that patching and attribution name.",
        )
    else:
        sweep = c1.radio("Patch", PATCH_CHOICES, key="causes_patch", horizontal=True)
    score = c2.radio(
        "Score by",
        SCORES,
        key="causes_score",
        horizontal=True,
        help="The logit difference answer − foil (what IOI studies use), or the answer's probability alone.",
    )
    if corrupted.strip():
        other = loaded.tokenizer.encode(corrupted, max_len=loaded.model.cfg.max_seq_len)
        st.caption(alignment(list(obs.tokens), [loaded.tokenizer.id_to_token(i) for i in other.ids]))
    try:
        ids, metric = patch_metric(ctx.source, corrupted, answer, foil, score)
    except ViewUnavailableError as exc:
        unavailable(exc)
        st.stop()
    cfg = loaded.model.cfg
    pass_s = get_pass_seconds(ctx.spec, ctx.device, obs.n_tokens, loaded.model)
    if method == PATCH_METHODS[1]:
        show_patch_views("causes.attribution_patching", kinds=tuple(PATCH_SWEEPS[sweep]))
        st.stop()
    if method == PATCH_METHODS[2]:
        try:
            rec = receivers_of(ctx.source, receivers, heads)
        except ViewUnavailableError as exc:
            unavailable(exc)
            st.stop()
        rec = rec if isinstance(rec, str) else tuple(rec)
        senders = cfg.n_heads * (cfg.n_layers if rec == "logits" else min(layer for layer, _, _ in rec))
        passes = senders * (cfg.n_layers + 1) / 2 * (1 if rec == "logits" else 2)
        estimate = passes * BATCHED * pass_s
        if not ctx.source.path_patching_kept(tuple(ids), metric, rec) and estimate > ASK_ABOVE_S:
            st.info(
                f"Path patching runs the model about {passes:.0f} times ({senders} sending heads): about "
                f"{estimate:.0f} s here. Once run it is kept for every user."
            )
            if not st.button(f"Patch the paths (about {estimate:.0f} s)", key="causes_run_paths"):
                st.stop()
            bar = st.progress(0.0, text="Path patching…")
            ctx.source.path_patching(tuple(ids), metric, rec, progress=lambda f: bar.progress(f, text=f"{f:.0%}"))
            bar.empty()
        show_patch_views("causes.paths", receivers=receivers, receiver_heads=heads)
        st.stop()
    kinds = PATCH_SWEEPS[sweep]
    todo = ctx.source.patching_todo(tuple(ids), metric, kinds)  # the kinds nobody has run yet: only those cost
    passes = patching_passes(cfg.n_layers, obs.n_tokens, cfg.n_heads, todo, reuses_prefix(ctx.loaded.model))
    estimate = passes * BATCHED * pass_s
    request = (ctx.spec, ctx.device, tuple(obs.ids), tuple(ids), metric, kinds)
    if todo and st.session_state.get("_patched") != request and estimate > ASK_ABOVE_S:
        kept = [k for k in kinds if k not in todo]
        st.info(
            f"This sweep runs the model about {passes:.0f} times ({cfg.n_layers} layers × {obs.n_tokens} positions "
            f"or {cfg.n_heads} heads): about {estimate:.0f} s here"
            + (f" ({', '.join(kept)} ran before and is kept)" if kept else "")
            + ". Once run it is kept for every user. Attribution patching (the method above) estimates it in about "
            f"{3 * pass_s:.1f} s."
        )
        if not st.button(f"Patch (about {estimate:.0f} s)", key="causes_run", icon=":material/play_arrow:"):
            st.stop()
        bar = st.progress(0.0, text="Patching…")
        began = time.perf_counter()
        ctx.source.patching(tuple(ids), metric, kinds, progress=lambda f: bar.progress(f, text=f"Patching… {f:.0%}"))
        bar.empty()
        st.caption(f"Patched in {time.perf_counter() - began:.1f} s.")
    st.session_state["_patched"] = request
    show_patch_views("causes.patching", kinds=tuple(kinds))

else:  # Circuits
    layer, head = layer_head_picker(obs.n_layers, obs.n_heads)
    embedding = st.radio(
        "Through the embedding",
        CIRCUIT_EMBEDDINGS,
        key="causes_embedding",
        horizontal=True,
        help="Effective: each token read alone through block 0 (its own attention and the first MLP), the nearest a "
        "head after the first layer reads to a bare token. Direct: the token embedding itself (what layer 0 reads). "
        "As fits the layer: direct for layer 0, effective after it.",
    )
    try:
        chosen = "" if embedding == CIRCUIT_EMBEDDINGS[0] else embedding
        (card,) = views(ctx, "causes.circuit", layer=layer, head=head, embedding=chosen)
        show_view(card, "circuit_card")
    except ViewUnavailableError as exc:
        unavailable(exc)
    st.subheader("Which earlier heads it reads")
    mode = st.radio(
        "Through its",
        list(COMPOSITION_SIDES),
        key="causes_composition",
        horizontal=True,
        format_func=lambda m: f"{COMPOSITION_SIDES[m]} ({m}-composition)",
        help="K: what its keys read (an induction head's keys read a previous-token head's output). Q: its queries. "
        "V: what it moves.",
    )
    try:
        (comp,) = views(ctx, "causes.composition", layer=layer, head=head, side=mode)
        show_view(comp, "composition_grid", on_select=lambda: open_sender("composition_grid"), selection_mode="points")
    except ViewUnavailableError as exc:
        unavailable(exc)
