"""Composition in the app: which earlier heads a head reads, through its queries, keys or values (Elhage et al.,
2021; model/analysis/composition.py). The caption names the strongest senders, compares them with the model's
typical pair, and says what each sender does on this text (a previous-token head behind an induction head)."""

from __future__ import annotations

import numpy as np

from viz.figures.causes import signed_grid
from viz.figures.common import Theme, with_subtitle
from viz.views.base import Captioned, Source, ViewUnavailableError, view

SIDES = {"K": "keys", "Q": "queries", "V": "values"}


@view("causes.composition", page="causes")
def composition_view(src: Source, theme: Theme, *, layer: int = 1, head: int = 0, side: str = "K"):
    """How strongly one head reads what each earlier head writes: its composition score with every head before it."""
    mode = side
    if mode not in SIDES:
        raise ViewUnavailableError(f"Composition is through the queries (Q), keys (K) or values (V), not {mode!r}.")
    if layer == 0:
        raise ViewUnavailableError("A head of layer 0 reads only the embeddings: pick a head of a later layer.")
    mine = src.composition(layer, head, mode)  # (layer, H): every earlier head's score with this one
    H = mine.shape[1]
    ids = np.stack(np.meshgrid(np.arange(layer), np.arange(H), indexing="ij"), axis=-1)  # (layer, H, 2)
    fig = signed_grid(
        mine,
        [f"L{i}" for i in range(layer)],
        [f"H{h}" for h in range(H)],
        title=f"What L{layer}H{head} reads through its {SIDES[mode]}: {mode}-composition with each earlier head",
        value_name="score",
        zmax=float(max(mine.max(), 1e-9)),
        cell_ids=ids,
        where="sender L%{y}%{x}",
        x_title="sender head",
        y_title="sender layer",
        theme=theme,
        signed=False,
    )
    typical = float(np.median(mine))
    order = np.argsort(-mine, axis=None)[:3]
    top = [(int(i) // H, int(i) % H) for i in order]
    named = ", ".join(f"L{a}H{b} ({mine[a, b]:.2f}, {mine[a, b] / typical:.1f}× typical)" for a, b in top)
    role = roles(src, layer, head, top)
    caption = (
        f"Each cell: ‖W_OV(sender) · M‖ / (‖W_OV‖ ‖M‖) with M L{layer}H{head}'s "
        f"{'W_Q W_Kᵀ' if mode == 'Q' else '(W_Q W_Kᵀ)ᵀ' if mode == 'K' else 'W_V W_O'}: how much of what it reads "
        f"through its {SIDES[mode]} lies in what the sender writes, from the weights alone (1: all of it). The "
        f"typical earlier head (the median of the {mine.size}) scores {typical:.2f}. Strongest: "
        f"{named}. {role} Click a sender to open it."
    )
    return Captioned(with_subtitle(fig, src.loaded.name, theme), caption)


def roles(src: Source, layer: int, head: int, top: list[tuple[int, int]]) -> str:
    """What the head and its strongest senders do: on a repeated random sequence for a decoder (induction and
    previous-token scores: an induction head's keys read a previous-token head), else their kind on this text."""
    run = None
    if src.loaded.has_lm:
        try:
            run = src.induction(24, 0)
        except ValueError:  # a toy vocabulary with too few whole words to draw a random sequence from
            run = None
    if run is not None:
        ind, prev = run["induction"], run["previous"]
        senders = ", ".join(f"L{a}H{b} {prev[a, b]:.2f}" for a, b in top)
        best = np.unravel_index(np.argmax(prev[:layer]), prev[:layer].shape)
        return (
            f"On a repeated random sequence L{layer}H{head} puts {ind[layer, head]:.2f} of its weight where an "
            "induction head looks (the token that followed the current one the last time it came); the share each "
            f"sender puts on the previous token there: {senders} (the strongest previous-token head before it: "
            f"L{best[0]}H{best[1]}, {prev[best]:.2f}). An induction head K-composes with a previous-token head."
        )
    kinds = src.kinds()
    said = []
    for a, b in top:
        kind = str(kinds.kind[a, b])
        if kind and kind != "broad":
            said.append(f"L{a}H{b} is a {kind} head on this text ({kinds.sentence(kind, a, b)})")
    return ("; ".join(said) + ".") if said else "None of them has a clear job on this text (Model overview)."
