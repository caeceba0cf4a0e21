"""What each lecture slide asks the room and the answer to expect, computed from the slide's own numbers, and the one
sentence a slide says (its caption's first). Used by viz/export/lecture.py; no Streamlit here."""

from __future__ import annotations

import math
import re

import numpy as np

from viz.views.captions import quoted_at

SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z“\"(])")
MAX_TAKEAWAY = 130  # characters: two lines at 24 pt across a 16:9 slide, so the picture keeps ≥ 80 % of its height


def takeaway(caption: str) -> str:
    """The slide's one sentence: the caption's first, cut at a clause when it runs long (the rest is in the notes)."""
    first = SENTENCE.split(caption.strip(), maxsplit=1)[0] if caption.strip() else ""
    if len(first) <= MAX_TAKEAWAY:
        return first
    cut = max(
        first.rfind("; ", 0, MAX_TAKEAWAY), first.rfind(", ", 0, MAX_TAKEAWAY), first.rfind(" — ", 0, MAX_TAKEAWAY)
    )
    return (first[:cut] if cut > 60 else first[: MAX_TAKEAWAY - 1].rsplit(" ", 1)[0]) + "…"


def _row(story, src) -> tuple[np.ndarray, list[str], int]:
    obs = src.obs
    return obs.patterns[story.layer, story.head, story.query].astype(np.float64), obs.tokens, story.query


def _best(row: np.ndarray, tokens: list[str]) -> tuple[int, str]:
    j = int(np.argmax(row))
    return j, quoted_at(tokens, j)


def _tokens(story, src, view):
    cfg, obs = src.loaded.model.cfg, src.obs
    tok = quoted_at(obs.tokens, story.query)
    return (
        "What does the model actually receive of our sentence?",
        f"{obs.n_tokens} tokens, each one row of a {cfg.vocab_size:,} × {cfg.d_model} table: {tok} becomes "
        f"{cfg.d_model} numbers (row {obs.ids[story.query]}), plus a vector that says where it stands.",
    )


def _positions(story, src, view):
    d = src.loaded.model.cfg.d_model
    slowest = 2 * math.pi * 10000 ** ((d - 2) / d)
    return (
        "The same word at two places gets the same embedding: how does the model know where it stands?",
        f"A vector of sines and cosines is added: dimension 0 repeats every 2π ≈ 6.3 positions, the last pair every "
        f"{slowest:,.0f}, so every position gets its own pattern.",
    )


def _query(story, src, view):
    dk = src.loaded.model.cfg.d_k
    tok = quoted_at(src.obs.tokens, story.query)
    return (f"What is {tok}'s query?", f"What {tok} looks for: X·W_q, {dk} numbers for this head.")


def _value(story, src, view):
    dk = src.loaded.model.cfg.d_k
    return ("Attention takes a weighted average: of what?", f"Of the values: each token's {dk}-number V = X·W_v.")


def _qk(story, src, view):
    row, tokens, q = _row(story, src)
    _, best = _best(row, tokens)
    return (
        f"Which word will {quoted_at(tokens, q)}'s query score highest in L{story.layer}H{story.head}?",
        f"{best}: its key has the largest dot product with the query, so it will get the most weight "
        f"({row.max():.0%}).",
    )


def _scale(story, src, view):
    row, tokens, _ = _row(story, src)
    dk = src.loaded.model.cfg.d_k
    sharp = np.where(row > 0, np.exp(math.sqrt(dk) * np.log(np.clip(row, 1e-30, None))), 0.0)  # softmax(√d_k · s)
    sharp /= sharp.sum()
    _, best = _best(row, tokens)
    return (
        f"What would the softmax do with scores √{dk} = {math.sqrt(dk):.2f} times larger?",
        f"Saturate: {best} would take {sharp.max():.0%} of the weight instead of {row.max():.0%}, and the gradient "
        "through the softmax would almost vanish.",
    )


def _scaling(story, src, view):
    demo = src.scaling()
    dks, unscaled, scaled = demo["d_k"], demo["max_weight_unscaled"], demo["max_weight_scaled"]
    return (
        "Random queries and keys: what happens to the largest weight as d_k grows?",
        f"Without ÷√d_k it climbs from {unscaled[0]:.2f} (d_k = {dks[0]}) to {unscaled[-1]:.2f} (d_k = {dks[-1]}); "
        f"with it, it stays between {min(scaled):.2f} and {max(scaled):.2f}.",
    )


def _softmax(story, src, view):
    row, tokens, q = _row(story, src)
    _, best = _best(row, tokens)
    return (
        f"What do {quoted_at(tokens, q)}'s weights add up to, and who gets most?",
        f"1 — {best} gets {row.max():.3f}; all the other keys share {1 - row.max():.3f}.",
    )


def _mix(story, src, view):
    full = src.full()
    row, tokens, q = _row(story, src)
    kv = story.head // full.kv_group
    terms = row[:, None] * full.v[story.layer, kv].astype(np.float64)  # (N, d_k): each key's w_j · v_j
    j = int(np.linalg.norm(terms, axis=1).argmax())
    return (
        f"Whose value dominates {quoted_at(tokens, q)}'s output?",
        f"{quoted_at(tokens, j)}'s: its w·v is the largest term of the sum (‖w·v‖ = {np.linalg.norm(terms[j]):.2f}).",
    )


def _heads(story, src, view):
    obs = src.obs
    looks = [quoted_at(obs.tokens, int(obs.patterns[story.layer, h, story.query].argmax())) for h in range(obs.n_heads)]
    distinct = len(set(looks))
    return (
        f"Do the {obs.n_heads} heads of layer {story.layer} look at the same word for "
        f"{quoted_at(obs.tokens, story.query)}?",
        f"{'No' if distinct > 1 else 'Yes'}: {distinct} different words — "
        + ", ".join(f"head {h} → {w}" for h, w in enumerate(looks))
        + ".",
    )


def _from_caption(question: str):
    return lambda story, src, view: (question, takeaway(view.caption))


def _block(story, src, view):
    pre = src.loaded.model.cfg.norm == "pre"
    where = "on each branch, before attention and before the feed-forward" if pre else "on the stream, after each add"
    return (
        "Where does the LayerNorm sit, and what is never normalised?",
        f"{where.capitalize()}; "
        + (
            "the residual stream itself is only added to." if pre else "so the stream is rescaled after every sublayer."
        ),
    )


def _mask(story, src, view):
    row, tokens, q = _row(story, src)
    later = float(row[q + 1 :].sum())
    return (
        f"How much of {quoted_at(tokens, q)}'s weight goes to later words when nothing masks them?",
        f"{later:.0%} here; the causal mask sets those scores to −∞, so they get exactly 0 and the row is "
        "renormalised over the words before.",
    )


def _link(story, src, view):
    on, layer, head, it, animal = story.link
    w = float(on.obs.patterns[layer, head, it, animal])
    return (
        f"{on.loaded.name}, layer {layer}, head {head}: where will “it” look most?",
        f"“animal”: {w:.0%} of its weight — the head resolves the pronoun.",
    )


def _motion(story, src, view):
    row, tokens, q = _row(story, src)
    _, best = _best(row, tokens)
    return (
        f"Watch the twelve steps: at which step is it decided where {quoted_at(tokens, q)} looks?",
        f"At q·k (step 6) {best} scores highest; ÷√d_k and the softmax (steps 7 and 9) turn that into "
        f"{row.max():.0%} of the weight; ·V (step 10) then takes its value most.",
    )


ASKS = {
    "tokens": _tokens,
    "positions": _positions,
    "query": _query,
    "value": _value,
    "qk": _qk,
    "scale": _scale,
    "scaling": _scaling,
    "softmax": _softmax,
    "mix": _mix,
    "motion": _motion,
    "heads": _heads,
    "kinds": _from_caption("How many heads have a job in the trained model, and in a random one of the same size?"),
    "block": _block,
    "stream": _from_caption("Does the residual stream grow or shrink through the blocks?"),
    "mask": _mask,
    "perm": _from_caption("Shuffle the words with positions switched off: does the pattern change?"),
    "link": _link,
}
