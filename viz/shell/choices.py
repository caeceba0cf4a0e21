"""What the session's settings ask of a model run (the options, which kinds to capture) and of the figures (the
theme). Read from session state; no computation."""

from __future__ import annotations

import streamlit as st

from model.observe import ATTENTION_KINDS, Options
from viz.figures.common import Theme

#: models with more heads than this capture only the patterns on pages that show no Q/K/V (SmolLM2: 270 heads,
#: whose q, k, v, z and sublayer inputs/outputs add 150 MB and 0.3 s at 512 tokens); the Q/K/V page and the
#: views that need them ask for the full capture (``CachedSource.full``)
LEAN_ABOVE_HEADS = 96
FULL_CAPTURE_PAGES = ("qkv",)


def current_options(page: str = "", cfg=None) -> Options:
    causal = {"as built": None, "on": True, "off": False}[st.session_state["causal_override"]]
    lean = cfg is not None and cfg.n_layers * cfg.n_heads > LEAN_ABOVE_HEADS and page not in FULL_CAPTURE_PAGES
    kinds = ("pattern",) if lean else ATTENTION_KINDS
    # pages keep every pattern of the first LONG_FROM tokens (the default); pages marked "whole text" read all
    return Options(causal=causal, scale=bool(st.session_state["scale_scores"]), kinds=kinds)


SCREEN_CELLS = 160  # token axes longer than this are block-averaged on screen (what a page can show)


def current_theme() -> Theme:
    state = st.session_state
    return Theme(
        presentation=bool(state["presentation"]),
        dark=bool(state["dark"]),
        colorscale=state["colorscale"],
        positions=state["label_positions"],
        max_cells=SCREEN_CELLS,
        interactive=True,
    )
