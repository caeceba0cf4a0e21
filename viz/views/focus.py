"""The attention map's caption: what the head does for the tokens in focus, from the numbers drawn; what a drawn
score is (its scale, its soft cap)."""

from __future__ import annotations

import math

import numpy as np

from viz.figures.text import pct
from viz.views.captions import quoted_at, weighed


def focus_caption(tokens: list[str], matrix, query: int, key: int, layer: int, head: int, mode: str = "weights") -> str:
    """One head's map in a sentence. matrix: (N, N) the weights (``mode="weights"``) or scores drawn; ``query``,
    ``key``: positions in focus among the drawn tokens (-1: none)."""
    m = np.asarray(matrix, dtype=np.float64)
    name = f"L{layer}H{head}"
    finite = np.where(np.isfinite(m), m, -np.inf)
    if mode == "scores":
        if query >= 0:
            row = finite[query]
            best = int(np.argmax(row))
            text = (
                f"{name}: query {quoted_at(tokens, query)} scores highest on {quoted_at(tokens, best)} "
                f"({row[best]:.2f})"
            )
            if key >= 0:
                rank = int((row > row[key]).sum()) + 1
                text += f"; on {quoted_at(tokens, key)} {row[key]:.2f} (rank {rank} of {np.isfinite(row).sum()})"
            return text + "."
        flat = int(np.argmax(finite))
        q, k = divmod(flat, m.shape[1])
        low = float(np.min(m[np.isfinite(m)]))
        return f"{name}: scores from {low:.2f} to {finite[q, k]:.2f} ({quoted_at(tokens, q)} → {quoted_at(tokens, k)})."
    if query >= 0:
        row = np.where(np.isfinite(m[query]), m[query], 0.0)
        seen = weighed(row)  # the keys it gives any weight, strongest first: never a key its mask hides
        strongest = ", ".join(f"{quoted_at(tokens, j)} ({pct(row[j])})" for j in seen[:3])
        if key < 0:
            return f"{name}: {quoted_at(tokens, query)} looks most at {strongest}."
        text = f"{name} gives {pct(row[key])} of {quoted_at(tokens, query)}'s attention to {quoted_at(tokens, key)}"
        if row[key] > 0:
            rank = int((row > row[key]).sum()) + 1
            text += " (its strongest key)" if rank == 1 else f" (rank {rank} of the {len(seen)} keys it weighs)"
        else:
            text += " (none: a key it does not weigh)"
        return text + "; strongest keys " + strongest + "."
    w = np.where(np.isfinite(m), m, 0.0)
    flat = int(np.argmax(w))
    q, k = divmod(flat, w.shape[1])
    column = w.mean(axis=0)
    most = int(np.argmax(column))
    return (
        f"{name}: the strongest weight is {quoted_at(tokens, q)} → {quoted_at(tokens, k)} ({pct(w[q, k])}); on average "
        f"a token gives {pct(column[most])} of its attention to {quoted_at(tokens, most)}, the most-attended key."
    )


def scores_caption(
    tokens: list[str], qk, scaled, query: int, key: int, d_k: int, scaled_on: bool, cfg=None, final=None, position=None
) -> str:
    """The QKᵀ panels in a sentence: how scaling changes the range, what a position term adds, and the focus
    query's strongest key among those it sees. qk, scaled: (N, N) the raw and scaled scores drawn; ``final``
    (N, N): the scores the softmax reads (−inf where masked; default: ``scaled``); ``position`` (N, N): the
    scores' position term (T5, MPNet, DeBERTa); ``cfg``: the model's config (its own scale and cap)."""
    qk, scaled = np.asarray(qk, dtype=np.float64), np.asarray(scaled, dtype=np.float64)
    final = scaled if final is None else np.asarray(final, dtype=np.float64)
    how = scaling_words(cfg, d_k) if cfg is not None else f"Dividing by √d_k = √{d_k} = {np.sqrt(d_k):.2f}"
    how += "," if cfg is not None and cfg.attn_softcap else ""
    ratio = np.ptp(scaled) / max(np.ptp(qk), 1e-30)
    verb = "keeps" if np.isclose(ratio, 1.0, rtol=1e-3) else "shrinks" if ratio < 1 else "stretches"
    cap = cfg.attn_softcap if cfg is not None else 0.0
    text = (
        f"{how} {verb} the scores from [{qk.min():.1f}, {qk.max():.1f}] to [{scaled.min():.2f}, {scaled.max():.2f}]"
        if scaled_on
        else f"Scaling is off, but capping at ±{cap:g} still takes the scores from [{qk.min():.1f}, {qk.max():.1f}] "
        f"to [{scaled.min():.2f}, {scaled.max():.2f}]"  # Gemma 2's cap is not part of the scaling the switch removes
        if cap
        else f"Scaling is off: the scores keep their range [{qk.min():.1f}, {qk.max():.1f}]"
    )
    if scaled_on and verb == "keeps":  # T5 folds 1/√d_k into its weights: multiplying by 1 moves nothing
        text = f"{how} keeps the scores' range [{qk.min():.1f}, {qk.max():.1f}]"
    if position is not None:
        seen = np.isfinite(final)
        term = np.asarray(position, dtype=np.float64)[seen]
        name = position_name(cfg) if cfg is not None else "position term"
        verb = "add" if name.startswith("position terms") else "adds"  # DeBERTa's two terms
        text += f"; the {name} {verb} {term.min():.2f} to {term.max():.2f}" if term.size else ""
    if query >= 0 and np.isfinite(final[query]).any():
        best = int(np.argmax(final[query]))
        text += (
            f"; query {quoted_at(tokens, query)} scores highest on {quoted_at(tokens, best)} ({final[query, best]:.2f})"
        )
        if key >= 0 and key != best:
            shown = "blocked by the mask" if np.isneginf(final[query, key]) else f"{final[query, key]:.2f}"
            text += f", on {quoted_at(tokens, key)} {shown}"
    elif query < 0 and np.isfinite(final).any():
        q, k = divmod(int(np.argmax(final)), final.shape[1])
        text += f"; the largest is {quoted_at(tokens, q)} → {quoted_at(tokens, k)}"
    return text + "."


def position_name(cfg) -> str:
    """What a model adds to its scores for position, as the panels and captions name it."""
    if cfg.disentangled:  # DeBERTa: content→position and position→content
        return "position terms (" + " + ".join(cfg.disentangled) + ")"
    return "relative-position bias"


def own_scale(cfg) -> float:
    """The model's own factor on q·k when it is not 1/√d_k (Gemma's query_pre_attn_scalar^-½, Granite's
    attention_multiplier), else 0."""
    factor = cfg.attn_scale
    return factor if factor and abs(factor * math.sqrt(cfg.d_k) - 1) > 1e-6 else 0.0


def scale_symbol(cfg, scale: bool = True) -> str:
    """The scaling step as drawn: "÷√d_k", the model's own "× 0.408", or "(not scaled)"."""
    if not scale:
        return "(not scaled)"
    return f"× {own_scale(cfg):.3g}" if own_scale(cfg) else "÷√d_k"


def score_label(cfg, scale: bool) -> str:
    """What a drawn score is: QKᵀ/√d_k, or the model's own factor (Gemma's query_pre_attn_scalar^-½), capped."""
    base = "QKᵀ (unscaled)"
    if scale:
        base = f"QKᵀ·{own_scale(cfg):.3g}" if own_scale(cfg) else "QKᵀ/√d_k"
    return f"{cfg.attn_softcap:g}·tanh({base} / {cfg.attn_softcap:g})" if cfg.attn_softcap else base


def scaling_words(cfg, d_k: int) -> str:
    """The scaling step in words, with the model's real numbers: ÷√d_k, or its own factor beside 1/√d_k."""
    if own_scale(cfg):
        text = f"Multiplying by this model's own scale {own_scale(cfg):.3g} (not 1/√{d_k} = {d_k**-0.5:.3g})"
    else:
        text = f"Dividing by √d_k = √{d_k} = {np.sqrt(d_k):.2f}"
    return text + (f", then capping at ±{cfg.attn_softcap:g}" if cfg.attn_softcap else "")


def softcap_caption(matrix: np.ndarray, cap: float) -> str:
    """How near the drawn scores (−inf where masked) come to the model's soft cap ±``cap``."""
    seen = np.abs(matrix[np.isfinite(matrix)]).astype(np.float64)
    near = int((seen > 0.9 * cap).sum())
    top = seen.max()
    before = cap * np.arctanh(min(top / cap, 1 - 1e-7))  # the score the cap bent into the largest drawn
    return (
        f"This model caps every score at ±{cap:g} (c·tanh(s/c), before the mask): the largest drawn here is "
        f"{top:.3g} ({before:.3g} before the cap), {near} of {seen.size} within 10 % of the cap."
    )


def sink_caption(share: np.ndarray, tokens: list[str]) -> str:
    """What a head's learned sink takes of the drawn rows (N,): on average, at most and where."""
    share = np.asarray(share, dtype=np.float64)
    top = int(np.argmax(share))
    return (
        f"This head has a learned sink (a logit that belongs to no token, drawn as its own column): it takes "
        f"{pct(share.mean())} of a row on average, at most {pct(share[top])} (query {quoted_at(tokens, top)}); each "
        "row's weights on the tokens sum to 1 minus that — nothing here is renormalised."
    )
