"""From the sidebar's request to a page context: load the requested model (keeping the previous one when it
fails), settle the device, observe the text. Everything heavy goes through the caches in services."""

from __future__ import annotations

import numpy as np
import streamlit as st

from model.devices import available_devices, resolve_device
from model.errors import CheckpointError
from model.io.catalog import ModelSpec
from viz.setting import Shape
from viz.shell.about import draw_status
from viz.shell.cache import CACHE
from viz.shell.choices import current_options, current_theme
from viz.shell.context import PageContext
from viz.shell.longrun import whole_status
from viz.shell.services import get_model, get_observation, upload_bytes
from viz.shell.source import CachedSource
from viz.shell.state import fit_state


def settle_device() -> str | None:
    """Make the requested device one that exists here (the CPU otherwise); returns the message to show."""
    requested = st.session_state["device"]
    device, message = resolve_device(requested)
    if device != requested or requested not in available_devices():
        st.session_state["device"] = device
    return message


def load_requested(spec: ModelSpec | None, data: bytes | None) -> tuple[ModelSpec | None, list[str], bool]:
    """Try the requested model; on failure keep the previous one.

    Returns (the active spec, error messages, whether the previous model is still shown).
    """
    failed: dict = st.session_state["failed"]
    errors, transient = [], False
    if spec is not None and spec != st.session_state["active_spec"]:
        if spec not in failed:
            try:
                get_model(spec, "cpu", data)
                st.session_state["active_spec"] = spec
            except CheckpointError as exc:  # the file itself: remembered, so it is not read again on every rerun
                failed[spec] = f"Could not load this model: {exc}"
            except Exception as exc:  # the moment (memory, I/O, a module another session was importing): said
                transient = True  # now, and tried again on the next run instead of being remembered
                errors.append(
                    f"Could not load this model ({type(exc).__name__}): {exc}. It is tried again on the next change "
                    "or reload."
                )
        if spec in failed:
            errors.append(failed[spec])
    active = st.session_state["active_spec"]
    still_previous = active is not None and spec is not None and active != spec and (spec in failed or transient)
    return active, errors, still_previous


def place_model(spec: ModelSpec) -> tuple[str, str | None]:
    """Put the active model on the chosen device: (device it is on, message if that fell back to the CPU)."""
    device = st.session_state["device"]
    if device == "cpu":
        return device, None
    try:
        get_model(spec, device, upload_bytes(spec))
        return device, None
    except Exception as exc:
        return "cpu", f"Could not move the model to {device} ({type(exc).__name__}); using the CPU."


def build_context(spec: ModelSpec, device: str, page: str = "") -> PageContext:
    """Observe the session's text with the active model (cached), fit the settings to it. Raises what
    the model raises on a text it cannot process."""
    loaded = get_model(spec, device, upload_bytes(spec))
    options = current_options(page, loaded.model.cfg)
    obs = get_observation(spec, device, st.session_state["text"], options, loaded)
    cfg = loaded.model.cfg
    follow_focus(tuple(obs.tokens))
    ordinary = tuple(int(i) for i in np.flatnonzero(~obs.special))
    n = obs.n_tokens
    if obs.truncated and cfg.max_seq_len > obs.n_tokens:  # a long text: the focus may be any token it reads whole
        n = min(obs.n_tokens_full, cfg.max_seq_len)
        ordinary = (*ordinary, *range(obs.n_tokens, n))
    fit_state(Shape(cfg.n_layers, cfg.n_heads, cfg.d_model - cfg.d_model % 2, n, ordinary), page)
    hide = bool(st.session_state["hide_special"])
    source = CachedSource(spec, loaded, obs, options, hide, obs.device)
    return PageContext(spec, loaded, obs, obs.device, current_theme(), hide, options, source)


def moved(old: tuple[str, ...], new: tuple[str, ...], index: int) -> int:
    """Where token ``index`` of ``old`` is in ``new``: the same occurrence (the k-th "it") of the same token, else
    the nearest one, else -1 (gone)."""
    if not 0 <= index < len(old):
        return -1
    token = old[index]
    nth = old[:index].count(token)
    found = [i for i, t in enumerate(new) if t == token]
    if not found:
        return -1
    return found[nth] if nth < len(found) else min(found, key=lambda i: abs(i - index))


def follow_focus(tokens: tuple[str, ...]) -> None:
    """When the text changed, the tokens in focus follow their token ("it" stays "it" when a word is typed before it),
    not their old position; a token that is gone leaves the focus where it was, to be clamped."""
    state = st.session_state
    before = state.get("_focus_tokens")
    state["_focus_tokens"] = tokens
    if before is None or before == tokens:
        return
    for key in ("focus_query", "focus_key"):
        index = state.get(key, -1)
        if isinstance(index, int) and index >= 0:
            found = moved(before, tokens, index)
            if found >= 0:
                state[key] = found


def prepare_context(
    spec: ModelSpec | None, data: bytes | None, slots, device_note: str | None, page: str
) -> PageContext | None:
    """Load the requested model (keeping the previous one on failure), place it on the device and observe the
    text for ``page`` (its url path). Messages go to the sidebar's slots; returns None when there is nothing
    to show yet."""
    active, errors, still_previous = load_requested(spec, data)
    for message in errors:
        slots.model.error(message)
    if still_previous:
        slots.model.caption("Still showing the previously loaded model.")
    if active is None:
        slots.status.error("No model is loaded yet: choose a model source above.")
        return None
    device, move_note = place_model(active)
    for note in (device_note, move_note):
        if note:
            slots.device.warning(note)
    try:
        context = build_context(active, device, page)
    except Exception as exc:
        problem = f"The model could not process this text: {type(exc).__name__}: {exc}"
        slots.status.error(problem)
        slots.problems.append(problem)
        return None
    draw_status(slots.status, context.loaded, context.obs, (CACHE.nbytes, CACHE.budget), whole_status(context))
    return context
