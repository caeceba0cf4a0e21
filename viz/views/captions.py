"""Captions computed from the numbers a figure draws: every sentence that states a fact about a figure is
made here, from the same arrays, so it cannot contradict what is shown. Plain text (pages escape Markdown).

Each function takes numpy arrays and token strings and returns one caption; none reads a model or a page.
"""

from __future__ import annotations

import numpy as np

from viz.figures.text import pct, position_of


def quoted(token: str) -> str:
    """A token in quotes, without the leading space byte-level BPE keeps (SmolLM2's “ animal” reads “animal”)."""
    return f"“{token.strip() or token}”"


def quoted_at(tokens, position: int) -> str:
    """The token at ``position`` of ``tokens`` in quotes, followed by its position where another token of the
    sequence reads the same (“at”·21), as the axes label repeated tokens ("at·21"): a caption that names two
    “at” says which. ``position`` may count from the end (-1: the last token)."""
    position = range(len(tokens))[position]
    word = quoted(tokens[position])
    return f"{word}·{position_of(tokens, position)}" if repeated(tokens, position) else word


def repeated(tokens, position: int) -> bool:
    """Whether another token of ``tokens`` reads in quotes as the one at ``position`` does."""
    word = quoted(tokens[position])
    return any(quoted(t) == word for i, t in enumerate(tokens) if i != position)


def rank_correlation(x, y) -> float:
    """Spearman's ρ of two equal-length sequences (ties get their mean rank); 0 when either is constant."""
    rx, ry = _ranks(np.asarray(x, dtype=np.float64)), _ranks(np.asarray(y, dtype=np.float64))
    if rx.std() == 0 or ry.std() == 0:
        return 0.0
    return float(np.corrcoef(rx, ry)[0, 1])


def _ranks(a: np.ndarray) -> np.ndarray:
    """0-based ranks with ties at the mean of their ranks (scipy's ``rankdata(a, "average") - 1``), in
    O(n log n) (262,144 cells at 512 tokens), without importing scipy.stats (≈ 1 s on a page's first run)."""
    a = np.asarray(a).ravel()
    order = np.argsort(a, kind="mergesort")
    ordered = a[order]
    starts = np.r_[True, ordered[1:] != ordered[:-1]]  # where each group of equal values begins
    group = np.cumsum(starts)  # (n,): group number, from 1, in sorted order
    bounds = np.r_[np.flatnonzero(starts), len(a)]  # first index of each group, then n
    ranks = np.empty(len(a))
    ranks[order] = 0.5 * (bounds[group] + bounds[group - 1] - 1)  # the mean of the group's 0-based ranks
    return ranks


def mask_change(tokens: list[str], change, *, switched_on: bool, n_layers: int) -> str:
    """The causal-mask lesson: which tokens' outputs move most when the mask is switched on (or lifted).

    change: (N,) relative change of each token's final vector, as the bars draw it."""
    c = np.asarray(change, dtype=np.float64)
    hi, lo = int(c.argmax()), int(c.argmin())
    out = [
        f"Largest change: token {hi} {quoted(tokens[hi])} ({c[hi]:.2f}); "
        f"smallest: token {lo} {quoted(tokens[lo])} ({c[lo]:.2f})."
    ]
    if len(c) >= 4:
        rho = rank_correlation(np.arange(len(c)), c)
        if rho <= -0.5:
            out.append(f"Earlier tokens change more (rank correlation with position {rho:+.2f}).")
        elif rho >= 0.5:
            out.append(f"Later tokens change more (rank correlation with position {rho:+.2f}).")
        else:
            out.append(f"The change does not follow the position closely (rank correlation {rho:+.2f}).")
    last = c[-1]
    if switched_on:
        if last < 0.01:
            out.append(f"The last token, {quoted(tokens[-1])}, still sees every token and barely changes ({last:.3f}).")
        elif n_layers > 1:
            out.append(
                f"The last token, {quoted(tokens[-1])}, still sees every token yet changes by {last:.2f}: "
                "the tokens it reads were changed by the mask in the layers below."
            )
        else:
            out.append(f"The last token, {quoted(tokens[-1])}, still sees every token; it changes by {last:.2f}.")
    else:
        out.append(
            f"Lifting the mask lets every token see the tokens after it; the last token, {quoted(tokens[-1])}, "
            f"changes by {last:.2f}."
        )
    return " ".join(out)


def padding(on_pads: float, effect: float, n_pads: int) -> str:
    """The padding lesson. on_pads: the largest weight any query gives a padded key; effect: the largest
    difference of the shorter text's real tokens, padded vs alone."""
    if n_pads == 0:
        return "Both texts have the same length: nothing is padded. Make text B shorter or longer."
    pads = (
        "Padded keys get exactly zero weight"
        if on_pads == 0
        else f"Padded keys get at most {on_pads:.1e} of the weight"
    )
    same = "the same as" if effect < 1e-4 else "different from"
    return (
        f"{pads} ({n_pads} padded position(s), every head). The shorter text's real tokens come out {same} "
        f"a run without padding (largest difference {effect:.1e})."
    )


def permutation(
    diffs,
    head: int,
    *,
    positions_on: bool,
    has_positions: bool,
    real_gap: float | None,
    causal: bool = False,
    window: int = 0,
) -> str:
    """The permutation lab. diffs: (H,) largest |un-shuffled − original| per head of the layer shown;
    real_gap: with positions off, the largest difference between that 'original' and the model's real
    pattern (positions on), else None; ``causal``: the runs had a causal mask, which tells orders apart by itself;
    ``window``: the layer's sliding window (0: none), which does too, with the causal mask or without it."""
    d = np.asarray(diffs, dtype=np.float64)
    mine, worst = float(d[head]), int(d.argmax())
    lifted = (
        f" With the mask lifted (Attention options) this layer's window of {window} keys would still tell them apart."
        if window
        else " With the mask lifted (Attention options) the two would agree exactly."
    )
    mask = (
        "the causal mask alone tells the orders apart: each token sees only the tokens before it, so a shuffle "
        "changes what every token can see (a causal model without positions still learns word order this way; "
        "Haviv et al., 2022)." + lifted
    )
    what = "the causal mask on"
    if window and not causal:  # the mask lifted, a sliding layer keeps a window on both sides (model/masks.py)
        what, mask = (
            "the causal mask lifted but a sliding window on",
            (
                f"this layer's sliding window alone tells the orders apart: each token sees only the tokens within "
                f"{window // 2} positions of it, so a shuffle changes what every token can see."
            ),
        )
    masked = causal or bool(window)  # a mask that tells the orders apart by itself
    if not has_positions:
        if masked:
            return (
                f"This model has no positional encoding, yet head {head}'s un-shuffled pattern differs from the "
                f"original by up to {mine:.3f}: {mask}"
            )
        return (
            f"This model has no positional encoding, so the switch changes nothing: head {head}'s un-shuffled "
            f"pattern equals the original (largest difference {mine:.1e})."
        )
    if positions_on:
        text = (
            f"Positions on: head {head}'s un-shuffled pattern differs from the original by up to {mine:.3f}; "
            f"over the layer's {len(d)} heads the largest difference is {d[worst]:.3f} (head {worst})."
        )
        if mine < 0.01:
            text += " This head barely depends on word order."
        return text
    if masked:
        text = (
            f"Positions off, {what}: head {head}'s un-shuffled pattern differs from the original by up "
            f"to {mine:.3f}: {mask}"
        )
    else:
        text = (
            f"Positions off: head {head}'s un-shuffled pattern equals the original (largest difference {mine:.1e}): "
            "without positions, attention cannot tell the two orders apart."
        )
    if real_gap is not None:
        text += (
            " “Original order” here is the model run without positions, not its real pattern: the real one "
            f"(positions on) differs from it by up to {real_gap:.3f}."
        )
    return text


def qk_plane(
    tokens: list[str], query: int, weights, coords_q, coords_k, ratio, scale: float, shown_keys: int = 3
) -> str:
    """The Q/K plane: what the alignment does, and how well closeness in the plane matches the weights.

    weights: (N,) the query's attention row; coords_q/coords_k: (N, 2) aligned, projected points."""
    w = np.asarray(weights, dtype=np.float64)
    dist = np.linalg.norm(np.asarray(coords_k) - np.asarray(coords_q)[query], axis=1)
    order = weighed(w)  # closeness to a key the query does not see says nothing about its weights
    seen, strongest = np.sort(order), order[:shown_keys]
    nearest = seen[np.argsort(dist[seen], kind="stable")][:shown_keys]
    rho = rank_correlation(-dist[seen], w[seen])
    verdict = (
        "closeness in the plane follows the weights well"
        if rho >= 0.6
        else "closeness in the plane follows the weights only loosely"
        if rho >= 0.3
        else "closeness in the plane says little about the weights for this query"
    )
    among = "" if len(seen) == len(w) else f" (of the {len(seen)} key{'s' * (len(seen) != 1)} it sees)"
    if len(seen) < 3:
        closing = f". It sees {len(seen)} key{'s' * (len(seen) != 1)}: too few to compare closeness with weight."
    else:
        closing = (
            f". Rank correlation between closeness and weight over the {len(seen)} keys it sees: ρ = {rho:+.2f} — "
            f"{verdict}."
        )
    return (
        f"Queries × c and keys ÷ c (c = {scale:.2f}) so both clouds are equally spread, then the keys shifted "
        "onto the queries' centre: no attention weight changes (c cancels in q·k; a shift adds the same amount "
        "to all of a query's scores). "
        f"The plane keeps {pct(ratio[0] + ratio[1])} of the variance. "
        f"{quoted_at(tokens, query)} weighs most: "
        + ", ".join(f"{quoted_at(tokens, j)} ({pct(w[j])})" for j in strongest)
        + f"; nearest to it in the plane{among}: "
        + ", ".join(quoted_at(tokens, j) for j in nearest)
        + closing
    )


def weighed(weights) -> np.ndarray:
    """The keys a query's row gives any weight, strongest first (ties in token order). A key its mask hides (a
    causal model's later tokens, outside a sliding window) gets exactly 0 — softmax never underflows to 0 on a key
    it sees at these sizes — and is never named as one of its strongest."""
    w = np.nan_to_num(np.asarray(weights, dtype=np.float64), nan=0.0, neginf=0.0)
    seen = np.flatnonzero(w > 0)
    return seen[np.argsort(-w[seen], kind="stable")]


def one_query(tokens: list[str], query: int, weights, shown: int = 3) -> str:
    """One query explained: its strongest keys among those it sees. weights: (N,) the query's attention row."""
    w = np.asarray(weights, dtype=np.float64)
    top = weighed(w)[:shown]
    return (
        f"Query {query} {quoted(tokens[query])}: strongest keys "
        + ", ".join(f"{quoted_at(tokens, j)} ({pct(w[j], 1)})" for j in top)
        + "."
    )


def wavelengths(dims, d_model: int) -> str:
    """The sinusoid curves: the wavelength of each dimension shown (2π·10000^(2i/d), i = dim // 2)."""
    parts = [f"dim {x}: {wavelength(x, d_model):,.1f}" for x in dims]
    return (
        "Wavelength in positions — " + "; ".join(parts) + ". Dimension 2i and 2i + 1 share the wavelength "
        "2π·10000^(2i/d), which grows with i: the first dimensions tell neighbours apart, the last ones change "
        "only over hundreds of positions."
    )


def wavelength(dim: int, d_model: int) -> float:
    """Wavelength, in positions, of dimension ``dim`` of a d_model-wide sinusoidal encoding."""
    return float(2 * np.pi * 10000 ** (2 * (dim // 2) / d_model))


def clipped_table(table, clip: float, name: str) -> str:
    """A position table drawn with a robust colour scale: what is shown and what the clipping hides."""
    t = np.asarray(table, dtype=np.float64)
    beyond = np.abs(t) > clip
    pos, dim = np.unravel_index(np.abs(t).argmax(), t.shape)
    return (
        f"{name}: {t.shape[0]} positions × {t.shape[1]} dimensions. Colours are clipped at ±{clip:.3g} (the "
        f"99th percentile of |value|): {beyond.mean():.1%} of the values lie beyond, the largest "
        f"{t[pos, dim]:+.3g} at position {pos}, dimension {dim} — without clipping, that one value would set "
        "the scale and wash the rest out."
    )


def scaling(demo: dict[str, np.ndarray], n_keys: int, samples: int) -> str:
    """The √d_k lesson on random vectors: what the curves show, with the setup and where the gradient claim
    holds (it does not for small d_k)."""
    d = demo["d_k"]
    mw_u, mw_s = demo["max_weight_unscaled"], demo["max_weight_scaled"]
    ent_u, ent_s = demo["entropy_unscaled"], demo["entropy_scaled"]
    g_u, g_s = demo["gradient_unscaled"], demo["gradient_scaled"]
    text = (
        f"Setup: {n_keys} queries and {n_keys} keys with independent N(0, 1) entries, {samples} draws per d_k. "
        f"Without ÷√d_k the largest weight grows from {mw_u[0]:.2f} (d_k = {d[0]}) to {mw_u[-1]:.2f} "
        f"(d_k = {d[-1]}) and the entropy falls from {ent_u[0]:.2f} to {ent_u[-1]:.2f} nats; with it they stay "
        f"between {mw_s.min():.2f}–{mw_s.max():.2f} and {ent_s.min():.2f}–{ent_s.max():.2f} nats. "
    )
    smaller = g_u < g_s
    grad = "the softmax's gradient (‖Jacobian‖)"
    if not smaller.any():
        return text + f"Without scaling, {grad} is not smaller at any d_k shown."
    first = int(np.argmax(smaller))
    end = f"{g_s[-1] / max(g_u[-1], 1e-300):.0f}× smaller at d_k = {d[-1]}: learning slows."
    if not smaller[first:].all():
        where = ", ".join(str(x) for x in d[smaller])
        return text + f"Without scaling, {grad} is smaller only at d_k = {where}; {end}"
    if first == 0:
        return text + f"Without scaling, {grad} is smaller at every d_k shown, {end}"
    return text + (
        f"Without scaling, {grad} is not smaller for d_k ≤ {d[first - 1]} (the scores are not extreme yet, and a "
        f"sharper softmax is steeper); from d_k = {d[first]} on it is, {end}"
    )


def value_norms(tokens: list[str], weights, contributions) -> str:
    """Value norms: the key whose share of the weight most exceeds its share of what is really moved, averaged
    over the queries, as the figure draws both (each row as shares). weights, contributions: (N, M)."""
    w = np.asarray(weights, dtype=np.float64)
    c = np.asarray(contributions, dtype=np.float64)
    w_share = (w / np.maximum(w.sum(-1, keepdims=True), 1e-12)).mean(0)  # (M,)
    c_share = (c / np.maximum(c.sum(-1, keepdims=True), 1e-12)).mean(0)
    j = int(np.argmax(w_share - c_share))
    head = "Contribution = α·‖v·W_o‖ (Kobayashi et al., 2020), each row as shares. "
    if w_share[j] - c_share[j] >= 0.05:
        return head + (
            f"Averaged over the queries, {quoted_at(tokens, j)} receives {pct(w_share[j])} of the weight but "
            f"{pct(c_share[j])} of the contribution: its value vector is small, so weight on it moves little."
        )
    return head + (
        "Here weight and contribution agree: no key's contribution share is 5 points below its weight share "
        f"(largest gap: {quoted_at(tokens, j)}, {pct(w_share[j])} vs {pct(c_share[j])})."
    )
