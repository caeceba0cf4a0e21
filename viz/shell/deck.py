"""The lecture deck in the session: "Add to deck" under every figure, the count in the sidebar. The Deck page
(viz/pages/deck.py) reorders, retitles, removes and exports; session files carry the deck."""

from __future__ import annotations

import streamlit as st

from viz.export.deck import MAX_ITEMS, make_item, predict_question
from viz.export.provenance import provenance
from viz.views.base import View

DECK_PAGE = "viz/pages/deck.py"


def deck() -> list[dict]:
    """This session's deck (a list of items, see viz.export.deck)."""
    return st.session_state.setdefault("deck", [])


def view_provenance(view: View) -> dict:
    """The provenance of a view drawn on this page: the model, the text, the options that change the numbers."""
    ctx = st.session_state.get("_ctx")
    if ctx is None:
        return provenance(view, model="", text="")
    options = {
        "causal": ctx.options.causal,
        "scaled scores": ctx.options.scale,
        "special tokens hidden": ctx.hide_special,
        "device": ctx.device,
    }
    return provenance(view, model=ctx.model_name, text=ctx.obs.text, options=options)


def add_to_deck(view: View) -> None:
    """Callback: the view as it is now becomes the deck's last slide (a predict-first lesson: question first)."""
    items = deck()
    if len(items) >= MAX_ITEMS:
        st.session_state["_deck_msg"] = f"The deck holds {MAX_ITEMS} figures at most: remove some first."
        return
    ctx = st.session_state.get("_ctx")
    question = predict_question(view, ctx.obs.tokens) if view.key == "lesson.predict" and ctx else ""
    items.append(make_item(view, view_provenance(view), question=question))
    st.session_state["_deck_msg"] = f"Added “{view.title}” to the deck (slide {len(items) + 1})."


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
    msg = st.session_state.pop("_deck_msg", None)
    if msg:
        st.toast(msg, icon=":material/playlist_add_check:")
    if items:
        st.page_link(
            DECK_PAGE, label=f"Lecture deck: {len(items)} figure{'s' * (len(items) != 1)}", icon=":material/slideshow:"
        )
