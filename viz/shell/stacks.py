"""The sidebar's choice of an encoder–decoder's stack — a run trained on “Watch it learn” or a T5 / BART folder or
upload alike: the encoder (the text is a source it reads) or the decoder (the text is a target it writes, reading the
source typed here through its cross-attention). Keys: ``<prefix>_stack`` and ``<prefix>_source``."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

import streamlit as st

from model.io.catalog import ModelSpec
from model.io.families.encdec import DEFAULT_SOURCE
from viz.settings import SEQ2SEQ_STACKS

#: per prefix: (an example source, an example target, what an empty source means, the longest source typed)
WORDS = {
    "trained": ("07mar1994", "1994-03-07", "the run's probe date", 64),
    "pair": ("The animal didn't cross the street.", "The animal was tired.", "a sentence about an animal", 2000),
}


def stack_spec(spec: ModelSpec, prefix: str, renamed: Callable[[], None] | None = None) -> ModelSpec:
    """``spec`` with the stack and (for the decoder) the source chosen here; ``renamed``: called after the text box
    changed with the stack (the example picker names it again)."""
    source_eg, target_eg, empty, longest = WORDS[prefix]
    stack = st.radio(
        "Stack",
        SEQ2SEQ_STACKS,
        format_func={"decoder": "Decoder (self- and cross-attention)", "encoder": "Encoder"}.get,
        key=f"{prefix}_stack",
        on_change=_swap_texts,
        args=(prefix, renamed),
        horizontal=True,
        help=f"An encoder–decoder is two transformers. The encoder reads the source ({source_eg}); the decoder writes "
        f"the target ({target_eg}), attending to its own earlier tokens (causal self-attention) and to the "
        "encoder's output (cross-attention).",
    )
    if stack == "encoder":
        st.caption(f"The text below is the source the encoder reads, such as {source_eg}")
        return replace(spec, stack="encoder", source_text="")
    source = st.text_input(
        "Source the encoder reads",
        key=f"{prefix}_source",
        placeholder=f"{source_eg} (empty: {empty})",
        max_chars=longest,
    )
    st.caption(f"The text below is the target the decoder writes, such as {target_eg}")
    return replace(spec, stack="decoder", source_text=source.strip())


def _swap_texts(prefix: str, renamed: Callable[[], None] | None) -> None:
    """The text follows the stack: the encoder reads the decoder's source; back on the decoder, the text the encoder
    read is its source again and the target it had comes back."""
    state = st.session_state
    if state[f"{prefix}_stack"] == "encoder":
        state[f"_{prefix}_target"] = state["text"]
        source = state.get(f"{prefix}_source") or _default_source(prefix)
        state["text"] = source or state["text"]
    else:
        state[f"{prefix}_source"] = state["text"]
        state["text"] = state.pop(f"_{prefix}_target", state["text"])
    if renamed is not None:
        renamed()


def _default_source(prefix: str) -> str:
    """What a decoder reads when no source was given: a run's first probe source, or the default sentence."""
    if prefix != "trained":
        return DEFAULT_SOURCE
    from model.learn.store import probe_texts, read

    key = st.session_state.get("trained_run", "")
    run = read(None, key) if key else None
    return probe_texts(run)[0] if run is not None else ""
