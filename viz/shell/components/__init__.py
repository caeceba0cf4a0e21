"""Interactive pieces the charts cannot do, as Streamlit components (st.components.v2): their JavaScript and
CSS live beside this file and are served from the app itself (no CDN, works offline).

token_strip  the text's tokens; click one to put it in focus as the query (Shift+click: the key)
head_view    BertViz-style lines drawn in the browser: hover isolates a token's lines, heads toggle, click focuses
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import streamlit as st

from viz.figures.headview import head_view_data
from viz.figures.text import position_of
from viz.figures.theme import Theme

HERE = Path(__file__).resolve().parent
_registered: dict = {}


def _component(name: str):
    """Register a component once per process (files read on first use, not at import)."""
    if name not in _registered:
        _registered[name] = st.components.v2.component(
            f"attention_lab.{name}",
            js=(HERE / f"{name}.js").read_text(encoding="utf-8"),
            css=(HERE / f"{name}.css").read_text(encoding="utf-8"),
        )
    return _registered[name]


def _mount(name: str, data: dict, key: str, where: tuple[list[int], list[int]]) -> None:
    """Show a component. ``data`` travels wrapped in a list: Streamlit scans a dict's values for dataframes,
    which imports pandas (0.4 s on a cold server's first page); a list goes straight to JSON. ``where``: the text
    position of each of the component's query and key tokens (:func:`places`)."""
    _component(name)(data=[data], key=key, on_focus_change=lambda: _store_focus(key, where))


def places(tokens: list[str], offset: int = 0) -> list[int]:
    """The text position of each token a component shows: ``offset`` on (a window of a long text), each token's
    own where special tokens are hidden (model.text.Placed) — the focus settings count text positions."""
    return [offset + position_of(tokens, i) for i in range(len(tokens))]


def _shown_focus(where: tuple[list[int], list[int]]) -> tuple[int, int]:
    """The focus query and key as indices among a component's tokens (-1: none, or not among them)."""
    return tuple(
        {p: i for i, p in enumerate(at)}.get(int(st.session_state[k]), -1)
        for at, k in zip(where, ("focus_query", "focus_key"), strict=True)
    )


def _store_focus(component_key: str, where: tuple[list[int], list[int]]) -> None:
    """Copy a component's focus event into the shared focus settings (every page reads those), as text
    positions."""
    focus = (st.session_state.get(component_key) or {}).get("focus") or {}
    for setting, field, at in (("focus_query", "query", where[0]), ("focus_key", "key", where[1])):
        if isinstance(i := focus.get(field), int):
            st.session_state[setting] = at[i] if 0 <= i < len(at) else -1


def token_strip(tokens: list[str], special, key: str = "focus_strip") -> None:
    """The text's tokens as chips; the focus query is blue, the focus key orange. Click to change them."""
    where = (places(tokens),) * 2
    query, focus_key = _shown_focus(where)
    data = {"tokens": [str(t) for t in tokens], "special": [bool(s) for s in special], "query": query, "key": focus_key}
    _mount("token_strip", data, key, where)


def head_view(
    patterns: np.ndarray,
    tokens: list[str],
    heads: list[int],
    threshold: float,
    theme: Theme,
    key: str,
    offset: int = 0,
    sink: np.ndarray | None = None,
    keys: list[str] | None = None,
):
    """The interactive head view of one layer. patterns: (H, N, N) of the heads to offer (toggles start on);
    ``offset``: the text position of the first token (a window of a long text); ``sink`` (H, N): a learned
    sink's share of each row, a faded target of its own; ``keys``: the key side's own tokens (cross-attention:
    patterns (H, N, S) of the target on the source)."""
    where = places(tokens, offset), (places(tokens, offset) if keys is None else list(range(len(keys))))
    query, focus_key = _shown_focus(where)
    data = head_view_data(patterns, tokens, heads, threshold, theme, query, focus_key, sink, keys)
    _mount("head_view", data, key, where)
