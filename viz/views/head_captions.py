"""Captions about heads — their spread across a model, ablation, Find heads' ranking, a prediction check —
computed from the numbers drawn, as :mod:`viz.views.captions` (plain text; pages escape Markdown)."""

from __future__ import annotations

import numpy as np

from viz.figures.text import apart, pct, small
from viz.views.captions import quoted, quoted_at, weighed


def spread(values: dict[str, np.ndarray], metric: str) -> str:
    """Heads specialise: the spread of one metric across heads, trained vs random init."""
    (trained, a), (other, b) = values.items()
    sa, sb = float(np.std(a)), float(np.std(b))
    ratio = sa / max(sb, 1e-12)
    if ratio >= 1.5:
        verdict = f"{trained}'s heads differ {ratio:.1f}× more from each other: training made them specialise."
    elif ratio <= 1 / 1.5:
        verdict = (
            f"here the random init's heads differ {1 / ratio:.1f}× more: on this metric and this text, {trained}'s "
            "heads show no specialisation."
        )
    else:
        verdict = "the two spreads are alike: this metric does not tell them apart on this text."
    return f"Spread of {metric} across heads (standard deviation): {trained} {sa:.3f}, {other} {sb:.3f} — {verdict}"


def heads_off(heads) -> str:
    """ "L0H2 off", "L0H2 and L1H3 off", or "5 heads off" for more than three."""
    names = [f"L{layer}H{head}" for layer, head in heads]
    if len(names) > 3:
        return f"{len(names)} heads off"
    return " and ".join([", ".join(names[:-1]), names[-1]] if len(names) > 1 else names or ["no head"]) + " off"


def ablation(tokens: list[str], change, heads, also=()) -> str:
    """The ablation lesson: mean and largest relative change of the final vectors with ``heads`` off (``also``:
    heads off in both runs)."""
    c = np.asarray(change, dtype=np.float64)
    hi = int(c.argmax())
    both = f" ({heads_off(also)} in both runs)" if also else ""
    return (
        f"With {heads_off(heads)}{both}, the final vectors move by {c.mean():.3f} on average (relative change); "
        f"most for token {hi} {quoted(tokens[hi])} ({c[hi]:.3f})."
    )


def found_heads(what: str, score, column, flagged, chance, n_queries: int, shown: int = 8) -> str:
    """Find heads: the strongest head for the chosen pairs, against chance, and which of the strongest owe their
    weight to a column pattern. score/column/flagged: (L, H) (column None for a per-query relation); chance: (L,)
    each layer's (a sliding window raises it)."""
    s = np.asarray(score, dtype=np.float64)
    L, H = s.shape
    chance = np.broadcast_to(np.asarray(chance, dtype=np.float64), (L,))
    order = np.lexsort((np.tile(np.arange(H), L), np.repeat(np.arange(L), H), -s.ravel()))[:shown]
    best = divmod(int(order[0]), H)
    low, high = small(chance.min()), small(chance.max())
    evenly = (
        f"a head spreading evenly would give {low}"
        if low == high
        else f"a head spreading evenly would give {small(chance[best[0]])} in its layer, {low}–{high} across the "
        "layers' masks"
    )
    text = (
        f"{what}: the strongest of the {L * H} heads is L{best[0]}H{best[1]}, with {small(s[best])} of the weight "
        f"({evenly}; averaged over {n_queries:,} quer{'y' if n_queries == 1 else 'ies'})."
    )
    twice = np.where(chance > 0, 2 * chance, 0.0)[:, None]  # (L, 1): each layer against its own chance
    above = int((s > twice).sum())
    text += (
        " No head gives more than twice chance."
        if above == 0
        else f" {above} head{'' if above == 1 else 's'} give{'s' if above == 1 else ''} more than twice chance."
    )
    if column is not None:
        col = np.asarray(column, dtype=np.float64)
        marked = [divmod(int(i), H) for i in order if flagged[divmod(int(i), H)]]
        if marked:
            text += (
                " Among the strongest, column patterns (the other tokens give the same keys nearly as much): "
                + (
                    ", ".join(
                        "L{}H{} ({} vs {} from the others)".format(lay, hd, *_pair(s[lay, hd], col[lay, hd]))
                        for lay, hd in marked
                    )
                )
                + "."
            )
        else:
            text += " None of the strongest is a column pattern: the other tokens give these keys much less."
    return text


def prediction_check(tokens: list[str], weights, query: int, guess: int) -> str:
    """Predict-then-look: how the student's guess for a query's strongest key fared. weights: (N,) the row; the
    ranks count only the keys it weighs (a causal model's later tokens get nothing)."""
    w = np.asarray(weights, dtype=np.float64)
    order = weighed(w)
    best = int(order[0])
    if guess == best:
        return (
            f"Right: {quoted_at(tokens, query)} attends most to {quoted_at(tokens, guess)} ({pct(w[guess])}). "
            f"Next: {quoted_at(tokens, order[1])} ({pct(w[order[1]])})."
            if len(order) > 1
            else f"Right: {quoted_at(tokens, query)} sees only {quoted_at(tokens, guess)}, so it gives it everything."
        )
    if w[guess] <= 0:
        got = f"gets none of its attention: {quoted_at(tokens, query)} does not see it"
    else:
        rank = int(np.flatnonzero(order == guess)[0]) + 1
        got = f"gets {pct(w[guess])} (rank {rank} of the {len(order)} keys it sees)"
    return (
        f"Not quite: your guess {quoted_at(tokens, guess)} {got}; "
        f"{quoted_at(tokens, query)} attends most to {quoted_at(tokens, best)} ({pct(w[best])})."
    )


def _pair(a: float, b: float) -> tuple[str, str]:
    """Two shares compared: with the fewest decimals that tell them apart, or to two significant digits when both
    are that small (0.00071 vs 0.00068, not 0.00 vs 0.00)."""
    x, y = apart(a, b)
    return (small(a), small(b)) if x == y and max(abs(a), abs(b)) < 0.01 else (x, y)
