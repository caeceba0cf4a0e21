"""The lecture deck in the session: "Add to deck" under every figure, the count in the sidebar. The Deck page
(viz/pages/deck.py) reorders, retitles, removes and exports; session files carry the deck."""

from __future__ import annotations

import base64
import json
import zlib

import streamlit as st

from model.io.budget import parse_json
from viz.export.deck import MAX_ITEMS, make_item, predict_question
from viz.export.provenance import provenance
from viz.figures.theme import SLIDE_TOKENS
from viz.views.base import View, ViewUnavailableError

DECK_PAGE = "viz/pages/deck.py"


def deck() -> list[dict]:
    """This session's deck (a list of items, see viz.export.deck)."""
    return st.session_state.setdefault("deck", [])


def view_provenance(view: View) -> dict:
    """The provenance of a view drawn on this page: the model, the text, the options that change the numbers."""
    ctx = st.session_state.get("_ctx")
    if view.key.startswith("learn."):  # a training run's figure: the run is its source, not the sidebar's model
        return provenance(view, model=view.selection.get("model", ""), text="")
    if ctx is None:
        return provenance(view, model="", text="")
    options = {
        "causal": ctx.options.causal,
        "scaled scores": ctx.options.scale,
        "special tokens hidden": ctx.hide_special,
        "device": ctx.device,
    }
    source = ctx.loaded.info.get("source_text")
    if source:  # an encoder–decoder's decoder: the source its cross-attention read is part of what was drawn
        options["source the encoder read"] = source
    return provenance(view, model=ctx.model_name, text=ctx.obs.text, options=options)


def _said(msg: str) -> None:
    """Answer a press at once: a toast from the callback shows on pages whose figures live in a fragment (Step through
    a head, Watch it learn), where the sidebar is not redrawn."""
    st.toast(msg, icon=":material/playlist_add_check:")


def add_to_deck(view: View) -> None:
    """Callback: the view as it is now becomes the deck's last slide (a predict-first lesson: question first); the
    same view pressed again (same figure, model, text and options) is not added twice."""
    items = deck()
    provenance = view_provenance(view)
    figure = view.exact().to_json()
    for i, item in enumerate(items):
        if item["key"] == view.key and item.get("provenance") == provenance and item["figure"] == figure:
            _said(f"“{view.title}” is already slide {i + 2} of the deck ({_count(items)}); nothing was added.")
            return
    if len(items) >= MAX_ITEMS:
        _said(f"The deck holds {MAX_ITEMS} figures at most: remove some first.")
        return
    ctx = st.session_state.get("_ctx")
    question = predict_question(view, ctx.obs.tokens) if view.key == "lesson.predict" and ctx else ""
    items.append(make_item(view, provenance, question=question, window=slide_window(), figure=figure))
    _said(f"Added “{view.title}” as slide {len(items) + 1} (after the title slide): the deck has {_count(items)}.")


def _count(items: list) -> str:
    return f"{len(items)} figure{'s' * (len(items) != 1)}"


def deck_button(view: View, key: str, row) -> None:
    """The "Add to deck" button of one figure (in the row of its download buttons)."""
    row.button(
        "Add to deck",
        key=f"{key}__deck",
        icon=":material/playlist_add:",
        type="tertiary",
        on_click=add_to_deck,
        args=(view,),
        help="Add this figure, as it is now, to the lecture deck (the Deck page exports it as slides)",
    )


def deck_status() -> None:
    """Sidebar: how many slides the deck holds, a link to it, and what the last "Add" did."""
    items = deck()
    if items:
        st.page_link(DECK_PAGE, label=f"Lecture deck: {_count(items)}", icon=":material/slideshow:")


def slide_window() -> tuple[int, int] | None:
    """The tokens a slide's token maps show when the sidebar asks for the window around the focus: SLIDE_TOKENS
    shown tokens centred on the focus query (or key), None when every token fits or the window is off."""
    ctx = st.session_state.get("_ctx")
    if ctx is None or not st.session_state.get("slide_window"):
        return None
    keep = [int(t) for t in ctx.obs.keep(ctx.hide_special)]
    n = len(keep)
    if n <= SLIDE_TOKENS:
        return None
    wanted = (st.session_state.get("focus_query", -1), st.session_state.get("focus_key", -1))
    focus = next((keep.index(f) for f in wanted if f in keep), 0)
    start = max(0, min(focus - SLIDE_TOKENS // 2, n - SLIDE_TOKENS))
    return start, start + SLIDE_TOKENS


def slide_note() -> None:
    """Sidebar: when slides are chosen and the text has more tokens than a slide labels at 18 pt, say so and
    offer the window around the focus."""
    ctx = st.session_state.get("_ctx")
    if ctx is None or st.session_state.get("export_size") != "slide":
        return
    n = len(ctx.tokens)
    if n <= SLIDE_TOKENS:
        return
    st.warning(
        f"This text has {n} tokens: a slide's token map labels {SLIDE_TOKENS} of them at 18 pt (the focus tokens "
        "and those the caption names always among them). Show only the tokens around the focus on slides, or "
        "shorten the text.",
        icon=":material/slideshow:",
    )
    st.toggle(f"Slides: only the {SLIDE_TOKENS} tokens around the focus", key="slide_window")


MAX_URL_DECK = 1500  # characters: a longer deck stays out of the link (the session file carries it)


def _registry_key(view_key: str) -> str:
    """The registered view of a view key: "qkv.projections" for "qkv.projections.Q" (a part of it)."""
    from viz.views import REGISTRY

    parts = view_key.split(".")
    return next((".".join(parts[:n]) for n in range(len(parts), 0, -1) if ".".join(parts[:n]) in REGISTRY), view_key)


LEFT_OUT = (
    "The lecture deck is not in this link: {why}. Students get it whole as one offline HTML file (Lecture deck → "
    "HTML), or as the session file."
)


def deck_param() -> tuple[str | None, str | None]:
    """The deck as a URL parameter (which views, with which selection and title) when every figure comes from the
    model and text the link opens and the result is short enough, else None and a note that says why and what to
    share instead."""
    ctx = st.session_state.get("_ctx")
    items = deck()
    if ctx is None or not items:
        return None, None
    recipes = []
    others = [
        i for i in items if (i.get("provenance", {}).get("model"), i.get("provenance", {}).get("text"))
        != (ctx.model_name, ctx.obs.text)
    ]  # fmt: skip
    if others:
        n, k = len(items), len(others)
        if k == n:
            which = "its figure comes" if n == 1 else "its figures come"
        else:
            which = f"{k} of its {n} figures " + ("comes" if k == 1 else "come")
        why = f"{which} from another model or text than the one the link opens"
        return None, LEFT_OUT.format(why=why)
    for item in items:
        record = item.get("provenance", {})
        recipe = {"v": item["key"], "s": record.get("selection", {})}
        if item["title"] != record.get("figure"):
            recipe["t"] = item["title"]
        recipes.append(recipe)
    raw = json.dumps(recipes, separators=(",", ":"), ensure_ascii=False).encode()
    text = base64.urlsafe_b64encode(zlib.compress(raw, 9)).decode().rstrip("=")
    if len(text) > MAX_URL_DECK:
        return None, LEFT_OUT.format(why=f"its {len(items)} figures would make the link too long")
    return text, None


def restore_url_deck() -> str | None:
    """Rebuild the deck a link carried (once, on the page's text and model); returns a note when some figure
    could not be rebuilt."""
    from viz.shell.services import views
    from viz.views import ViewUnavailableError

    text = st.session_state.pop("_url_deck", None)
    ctx = st.session_state.get("_ctx")
    if not text or ctx is None:
        return None
    try:
        packed = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
        recipes = parse_json(zlib.decompressobj().decompress(packed, 2**16), "the link's deck")  # ≤ 64 KiB unpacked
        if not isinstance(recipes, list):
            raise ValueError("not a list")
    except (ValueError, zlib.error, UnicodeDecodeError):  # a malformed link: say so, keep the app working
        return "The link's deck could not be read; it is left out."
    skipped = 0
    items = deck()
    for recipe in recipes[:MAX_ITEMS]:
        try:
            key = _registry_key(str(recipe["v"]))
            selection = {k: _tuples(v) for k, v in dict(recipe.get("s", {})).items()}
            built = {v.key: v for v in views(ctx, key, **selection)}
            view = built[recipe["v"]]
        except (KeyError, TypeError, ValueError, RecursionError, ViewUnavailableError):
            skipped += 1
            continue
        question = predict_question(view, ctx.obs.tokens) if view.key == "lesson.predict" else ""
        item = make_item(view, view_provenance(view), question=question)
        item["title"] = str(recipe.get("t") or item["title"])[:200]
        items.append(item)
    return f"{skipped} figure(s) of the link's deck could not be rebuilt." if skipped else None


def _tuples(value):
    return tuple(_tuples(v) for v in value) if isinstance(value, list) else value


def build_lecture_here(items: list) -> None:
    """Build the lecture on the sidebar's text with a progress bar, and add it after what the deck holds (nothing is
    replaced); the induction run is trained (about 20 s) when the server has not stored it yet."""
    from viz.export.lecture import build_lecture

    ctx = st.session_state.get("_ctx")
    text = ctx.obs.text if ctx is not None else ""
    bar = st.progress(0.0, text="Building the lecture…")
    try:
        built, notes = build_lecture(text, progress=lambda f, m: bar.progress(min(1.0, f), text=m))
    except ViewUnavailableError as exc:  # a model the lecture needs refused a view: say why, keep the deck
        st.session_state["_lecture_notes"] = [f"The lecture could not be built: {exc}"]
        return
    finally:
        bar.empty()
    items.extend(built)
    st.session_state.pop("_deck_pptx", None)
    _said(f"Built the lecture: {len(built)} figures, slides {len(items) - len(built) + 2} to {len(items) + 1}.")
    st.session_state["_lecture_notes"] = notes
