"""Session state, owned here: initialised from :data:`viz.settings.SETTINGS`, kept across page switches and
fitted to the current model and text."""

from __future__ import annotations

import copy

import streamlit as st

from viz.settings import SETTINGS, Shape

#: shell bookkeeping that is not a user setting
INTERNAL = {
    "active_spec": None,  # the last model spec that loaded successfully
    "failed": {},  # spec -> message, so a bad file is not re-parsed on every rerun
    "uploads": {},  # digest -> (name, bytes): this session's uploads only
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
