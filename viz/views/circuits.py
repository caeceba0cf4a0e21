"""A head's circuit card in the app: its QK and OV singular values and token pairs through the embeddings, with a
caption that names both sides of every pair (the text's tokens, the vocabulary's), shows raw bytes readably, gives
both copying measures and says when the card is a poor guide to what the head does on this text."""

from __future__ import annotations

import re

from model.analysis.circuits import EMBEDDINGS, circuit_problem
from viz.figures.causes import circuit_card
from viz.figures.common import Theme, with_subtitle
from viz.figures.text import token_labels
from viz.views.base import Captioned, Source, ViewUnavailableError, view
from viz.views.causes import effective_rank, token_text

POOR = 0.5  # below this mean cosine the head reads something else than the embeddings the card uses
BYTE = re.compile(r"\\x([0-9a-fA-F]{2})")


def readable(src: Source, i: int) -> str:
    """A token's label with raw bytes as [0x95] rather than '\\x95' (a byte-level BPE piece of a character)."""
    return BYTE.sub(lambda m: f"[0x{m.group(1).upper()}]", token_text(src, i))


def said(token: str) -> str:
    return f"“{token.strip() or token}”"


@view("causes.circuit", page="causes")
def circuit_view(src: Source, theme: Theme, *, layer: int = 0, head: int = 0, embedding: str = ""):
    """A head's QK and OV circuits: singular values and its strongest token pairs through the embeddings."""
    if embedding and embedding not in EMBEDDINGS:
        raise ViewUnavailableError(f"Read the circuits through the {' or the '.join(EMBEDDINGS)} embedding.")
    problem = circuit_problem(src.loaded.model)
    if problem:
        raise ViewUnavailableError(f"{src.loaded.name}: a head's circuits read the vocabulary, but {problem}.")
    card = src.circuit(layer, head, embedding or None)
    pairs = card.ov_pairs
    labels = token_labels([f"{readable(src, a)} → {readable(src, b)}" for a, b, _ in pairs], "none")
    fig = circuit_card(
        card.qk_singular,
        card.ov_singular,
        labels,
        [v for *_, v in pairs],
        title=f"Layer {layer}, head {head}: its QK and OV circuits",
        theme=theme,
        pairs_title="OV: text → vocabulary",
    )
    cfg = src.loaded.model.cfg
    group = cfg.group_size
    shared = (
        f" (shared with query heads {card.kv_head * group}–{card.kv_head * group + group - 1})" if group > 1 else ""
    )
    kind = "copies" if card.copying > 0.7 else "suppresses what it attends to" if card.copying < -0.7 else "mixes"
    a, b, _ = pairs[0]
    qa, qb, _ = card.qk_pairs[0]
    which = (
        "the effective embedding (each token read alone through block 0: its own attention and the first MLP)"
        if card.embedding == "effective"
        else "the token embedding itself"
    )
    other = "direct" if card.embedding == "effective" else "effective"
    mine, of = card.self_in_top5
    shown = [readable(src, t) for t in (a, b, qa, qb)]
    bytes_note = " ([0x95]-style tokens are raw bytes, pieces of a character)" if any("[0x" in t for t in shown) else ""
    guide = (
        f"On this text what L{layer}H{head} reads resembles these embeddings with a mean cosine of "
        f"{card.reads_like:.2f}"
        + (
            f": after {layer} layers the stream holds much more than the token, so the card is a poor guide to what "
            "this head does here. Attribution and Patching measure that."
            if card.reads_like < POOR
            else ": the card describes what it reads."
        )
    )
    caption = (
        f"L{layer}H{head} reads key/value head {card.kv_head}{shared}. Through {which}, less the vocabulary's mean "
        f"(the {other} embedding is the alternative above): its OV circuit's eigenvalue copying score is "
        f"{card.copying:.2f} (Elhage et al., 2021: Σλ/Σ|λ| of E·W_V·W_O·U; near 1 raises the token it attends to, "
        f"near −1 lowers it): through this path it {kind}; and for {mine} of the text's {of} distinct tokens the token "
        f"itself is among the 5 its OV row raises most. QK uses {effective_rank(card.qk_singular)} and OV "
        f"{effective_rank(card.ov_singular)} of {len(card.ov_singular)} directions for 90 % of their size. The text "
        f"token {said(shown[0])} raises the vocabulary token {said(shown[1])} most; the text token {said(shown[2])} "
        f"looks hardest for the text token {said(shown[3])}{bytes_note}. {guide} Norm weights are folded in; RoPE is "
        "left out."
    )
    return Captioned(with_subtitle(fig, src.loaded.name, theme), caption)
