"""Session state, owned here: initialised from :data:`viz.settings.SETTINGS`, kept across page switches and
fitted to the current model and text."""

from __future__ import annotations

import copy

import streamlit as st

from viz.setting import Shape
from viz.settings import SETTINGS

#: shell bookkeeping that is not a user setting
INTERNAL = {
    "active_spec": None,  # the last model spec that loaded successfully
    "failed": {},  # spec -> message, so a bad file is not re-parsed on every rerun
    "uploads": {},  # digest -> (name, bytes): this session's uploads only
    "_asked_for": None,  # the file whose questions (heads, block order) the sidebar's answers belong to
}


def init_state() -> None:
    """Give every setting its default once, and keep every value across page switches.

    Streamlit drops a widget's value when a page does not draw that widget; re-assigning the keys at the
    start of every run keeps layer, head and each page's choices while the user visits other pages.
    """
    for setting in SETTINGS:
        if setting.key in st.session_state:
            st.session_state[setting.key] = st.session_state[setting.key]
        else:
            value = setting.initial()
            if value is not None:  # model-dependent defaults wait for fit_state
                st.session_state[setting.key] = value
    for key, value in INTERNAL.items():
        if key not in st.session_state:
            st.session_state[key] = copy.copy(value)


def fit_state(shape: Shape, page: str) -> None:
    """Fill model-dependent defaults (of shared settings and of ``page``'s widgets) and clamp indices that the
    current model or text no longer has."""
    for setting in SETTINGS:
        if setting.fits is None and not callable(setting.default):
            continue
        current = st.session_state.get(setting.key)
        if current is None and setting.page not in (None, page):
            continue  # filled when its page is first drawn
        fitted = setting.fit(current, shape, st.session_state)
        if fitted != current:
            st.session_state[setting.key] = fitted


MAX_URL_TEXT = 1000  # longer texts stay out of the URL (a note says so)
NOT_IN_LINKS = ("upload", "folder")  # a link must not name a file on the server or one person's upload


def load_url_state() -> list[str]:
    """At the start of a session, take the settings the URL names (a reload or a shared link). Invalid
    values are ignored; returns notes about them."""
    if st.session_state.get("_url_loaded"):
        return []
    st.session_state["_url_loaded"] = True
    notes = []
    if "deck" in st.query_params:  # rebuilt once the page's model and text are ready (restore_url_deck)
        st.session_state["_url_deck"] = st.query_params["deck"]
    for setting in SETTINGS:
        if setting.url and setting.key in st.query_params:
            try:
                value, note = setting.from_url(st.query_params[setting.key])
            except ValueError as exc:
                notes.append(f"The link's setting was {exc}.")
                continue
            if note:
                notes.append(f"The link's {note}.")
            if setting.key == "model_kind" and value in NOT_IN_LINKS:
                continue
            st.session_state[setting.key] = value
    return notes


def save_url_state() -> str | None:
    """Put the settings that differ from their defaults into the URL; returns a note when the text is too long
    to travel in a link."""
    params = {}
    note = None
    uploaded = st.session_state.get("model_kind") in NOT_IN_LINKS
    for setting in SETTINGS:
        if not setting.url or setting.key not in st.session_state:
            continue
        value = st.session_state[setting.key]
        if value in (setting.initial(), []) or (uploaded and setting.key.startswith(("model_kind", "rand_"))):
            continue
        if setting.key.startswith("rand_") and st.session_state.get("model_kind") != "random":
            continue
        if setting.key == "text" and len(value) > MAX_URL_TEXT:
            note = (
                f"The text has {len(value):,} characters: links keep texts up to {MAX_URL_TEXT:,}, so this one "
                "is not in the URL."
            )
            continue
        params[setting.key] = setting.to_url(value)
    from viz.shell.deck import deck_param  # the deck travels too when it is small

    deck, left_out = deck_param()
    if deck:
        params["deck"] = deck
    note = " ".join(n for n in (note, left_out) if n) or None
    if dict(st.query_params) != params:
        st.query_params.from_dict(params)
    return note
