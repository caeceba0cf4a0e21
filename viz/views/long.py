"""The attention views of a text read whole (model/long.py): a head as block means over the whole text or exact in
a window, every head of a layer, the mean, the overview. The registered views in viz/views/attention.py hand over
to these when the source holds a long observation (``src.long``); captions are computed from the numbers drawn."""

from __future__ import annotations

import numpy as np

from model.analysis.long_heads import long_sink_mass
from model.analysis.rows import seeing
from model.long import LongObservation
from viz.figures import attention_heatmap, heads_grid, heatmap_panels, model_overview
from viz.figures.common import Theme, token_ranges, with_subtitle
from viz.figures.decoder import head_scores
from viz.figures.overview import THUMB
from viz.figures.text import pct
from viz.views.base import Captioned, ViewUnavailableError
from viz.views.captions import quoted, weighed
from viz.views.focus import score_label

#: the largest window drawn exactly (rows × keys); wider ones are block means of exact weights all the same
WINDOW_CELLS = 4096 * 1024
GRID_MAX = 64  # as viz.figures.grids: small multiples need no more cells


def where(long: LongObservation, position: int) -> str:
    """A token and its position: “Mary” (8,041)."""
    return f"{quoted(long.tokens[position])} ({position:,})"


def clip_window(long: LongObservation, window: tuple[int, ...]) -> tuple[int, int, int, int] | None:
    """(q0, q1, k0, k1) within the text, or None for the whole text (an empty or full window)."""
    if len(window) != 4:
        return None
    n = long.n_tokens
    q0, q1, k0, k1 = (max(0, min(n, int(v))) for v in window)
    if q1 <= q0 or k1 <= k0 or (q0, q1, k0, k1) == (0, n, 0, n):
        return None
    return q0, q1, k0, k1


def head_caption(long: LongObservation, layer: int, head: int, query: int, key: int) -> str:
    """What one head does over the whole text, from its exact focus row (a query in focus) or its summary."""
    name = f"L{layer}H{head}"
    if 0 <= query < long.n_tokens:
        row = long.row(layer, head, query)
        top = weighed(row)[:3]  # never a key the mask hides
        strongest = ", ".join(f"{where(long, j)} {pct(row[j])}" for j in top)
        if not 0 <= key < long.n_tokens:
            return f"{name} over all {long.n_tokens:,} tokens: {where(long, query)} looks most at {strongest}."
        rank = int((row > row[key]).sum()) + 1
        text = f"{name} over all {long.n_tokens:,} tokens gives {pct(row[key])} of {where(long, query)}'s "
        text += f"attention to {where(long, key)}"
        seen = f" (rank {rank:,} of {int((row > 0).sum()):,} keys it sees);"
        text += seen if row[key] > 0 else " (a key it does not see);"
        return text + " strongest keys " + strongest + "."
    summary, index = long.head_summary(layer, head)  # this head's alone while its layer is not streamed yet
    stats = {k: float(v[index]) for k, v in summary.stats.items()}
    received = summary.received[index]
    most = int(np.argmax(received))
    share = received[most] / max(received.sum(), 1e-12)
    first = np.arange(long.n_tokens) == 0
    sees = np.flatnonzero(seeing(long.rules[layer], first, long.n_tokens).numpy() & ~first)  # a window hides the rest
    # the share is over the later queries that can see position 0 (model.analysis.sinks.sink_shares)
    over = f" (over queries 1–{sees[-1]:,}, the ones that can see it)" if 0 < len(sees) < long.n_tokens - 1 else ""
    return (
        f"{name} over all {long.n_tokens:,} tokens: {where(long, most)} receives the most attention ({pct(share)} of "
        f"all weight); on average position 0 gets {pct(stats['position 0'])} of a query's weight{over} and the "
        f"token before it {pct(stats['previous'])}, at a mean distance of {stats['mean_distance']:,.0f} tokens."
    )


def attention(
    src, theme: Theme, layer: int, head: int, mode: str, query: int, key: int, span, cells: str, subtitle: str
):
    """One head: block means (``cells="max"``: each block's largest weight) over the whole text, or exact weights
    (scores) in ``span`` (q0, q1, k0, k1)."""
    long: LongObservation = src.long
    box = clip_window(long, span)
    name = f"Layer {layer}, head {head}"
    if box is None:
        if mode == "scores":
            raise ViewUnavailableError(
                f"Raw scores are shown in a window: {long.n_tokens:,} × {long.n_tokens:,} of them would be block "
                "means of −∞ and numbers. Choose a window of queries and keys below."
            )
        if cells not in ("mean", "max"):
            raise ValueError("cells must be 'mean' or 'max'")
        grid, bounds = long.grid(layer, head, cells), long.edges()
        labels = token_ranges(bounds)
        focus = tuple(int(np.searchsorted(bounds, p, side="right") - 1) if p >= 0 else -1 for p in (query, key))
        what = "block means" if cells == "mean" else "each block's largest weight"
        fig = attention_heatmap(
            grid, labels, title=f"{name} — attention weights, all {long.n_tokens:,} tokens ({what})",
            theme=theme.exact(), focus=focus, masked=~np.isfinite(grid),
        )  # fmt: skip
        return Captioned(with_subtitle(fig, subtitle, theme), head_caption(long, layer, head, query, key))
    q0, q1, k0, k1 = box
    if (q1 - q0) * (k1 - k0) > WINDOW_CELLS:
        raise ViewUnavailableError(
            f"A window of {q1 - q0:,} queries × {k1 - k0:,} keys is too large to compute exactly here (at most "
            f"{WINDOW_CELLS:,} cells); narrow it, or clear it to see the whole text as block means."
        )
    rule = long.rules[layer]
    rows, cols = np.arange(q0, q1), np.arange(k0, k1)
    blocked = np.zeros((len(rows), len(cols)), dtype=bool)
    if rule.causal:
        blocked |= cols[None] > rows[:, None]
    if rule.window:
        far = np.abs(rows[:, None] - cols[None])
        blocked |= (cols[None] <= rows[:, None] - rule.window) if rule.causal else (far > rule.window // 2)
    if mode == "scores":
        values = long.scores(layer, head, (q0, q1), (k0, k1))
        what = "scores " + score_label(src.loaded.model.cfg, src.options.scale)
    else:
        values, what = long.weights(layer, head, (q0, q1), (k0, k1)), "attention weights"
    labels = [f"{long.tokens[i]}·{i}" for i in range(min(q0, k0), max(q1, k1))]
    first = min(q0, k0)
    fig = attention_heatmap(
        values, labels[q0 - first : q1 - first], key_tokens=labels[k0 - first : k1 - first],
        title=f"{name} — {what}, queries {q0:,}–{q1 - 1:,} × keys {k0:,}–{k1 - 1:,} of {long.n_tokens:,}",
        mode=mode, theme=theme.exact(), masked=blocked if mode == "weights" else None,
        focus=(query - q0 if q0 <= query < q1 else -1, key - k0 if k0 <= key < k1 else -1),
    )  # fmt: skip
    return Captioned(with_subtitle(fig, subtitle, theme), head_caption(long, layer, head, query, key))


def heads(src, theme: Theme, layer: int, subtitle: str):
    """Every head of a layer as block means of the whole text, on one colour scale."""
    long: LongObservation = src.long
    means, bounds = long.pooled(GRID_MAX, [layer], fine=True)  # the layer's mean (below it) reads the same sums
    fig = heads_grid(
        means[0], None, title=f"Layer {layer}: every head, all {long.n_tokens:,} tokens", theme=theme,
        cols=min(4, long.n_heads), block_labels=token_ranges(bounds),
    )  # fmt: skip
    return with_subtitle(fig, subtitle, theme)


def mean(src, theme: Theme, layer: int, query: int, key: int, subtitle: str):
    """The mean over a layer's heads (block means: the mean of the heads' block means)."""
    long: LongObservation = src.long
    grid = long.head_mean(layer)  # (B, B)
    bounds = long.edges()
    focus = tuple(int(np.searchsorted(bounds, p, side="right") - 1) if p >= 0 else -1 for p in (query, key))
    title = f"Layer {layer}: mean over {long.n_heads} heads, all {long.n_tokens:,} tokens (block means)"
    fig = attention_heatmap(
        grid, token_ranges(bounds), title=title, theme=theme.exact(), focus=focus, masked=~np.isfinite(grid)
    )
    return with_subtitle(fig, subtitle, theme)


def overview(src, theme: Theme, layer: int, head: int, title: str, layer_labels: list[str], subtitle: str):
    """Every head as a thumbnail of the whole text (block means pooled from each head's summary)."""
    long: LongObservation = src.long
    thumbs, _ = long.pooled(THUMB)
    fig = model_overview(
        thumbs, title=f"{title}, all {long.n_tokens:,} tokens", theme=theme, selected=(layer, head),
        layer_labels=layer_labels,
    )  # fmt: skip
    return with_subtitle(fig, subtitle, theme)


def sinks(src, theme: Theme, layer: int, head: int, subtitle: str, threshold: float) -> dict:
    """The sinks lesson over the whole text: every head's weight on position 0 (exact), and one head's block means
    with and without it."""
    long: LongObservation = src.long
    mass = long_sink_mass(long)
    grid = head_scores(mass, title=f"Weight on position 0 ({quoted(long.tokens[0])}), mean over the later "
                       "queries that see it", value_name="weight on pos. 0", threshold=threshold,
                       theme=theme)  # fmt: skip
    flat = np.argsort(-mass.ravel(), kind="stable")[:3]
    strongest = ", ".join(f"L{i // mass.shape[1]}H{i % mass.shape[1]} ({mass.ravel()[i]:.2f})" for i in flat)
    grid_caption = (
        f"Over all {long.n_tokens:,} tokens, {int((mass >= threshold).sum())} of {mass.size} heads put at least "
        f"{pct(threshold)} of their weight on position 0 ({quoted(long.tokens[0])}; dots mark them); the strongest: "
        f"{strongest}. Click a cell to open it."
    )
    counts, bounds = long.counts(layer), long.edges()
    without = np.where(counts > 0, long.peak(layer, head, "without first") / np.maximum(counts, 1), -np.inf)
    labels = token_ranges(bounds)
    panels = heatmap_panels(
        [(long.grid(layer, head), labels, labels, "as computed"),
         (without.astype(np.float32), labels, labels, "position 0 taken away, each row rescaled to sum to 1")],
        title=f"Layer {layer}, head {head} with and without its sink, all {long.n_tokens:,} tokens (block means)",
        theme=theme, shared_rows=True,
    )  # fmt: skip
    rest = 1.0 - long.column(layer, head, 0)[1:]  # what each later query keeps for the other keys
    panel_caption = (
        f"This head puts {pct(mass[layer, head])} of its weight on position 0 over the whole text. Taking that away "
        f"and rescaling shows where the other {pct(1 - mass[layer, head])} goes; the rescaling magnifies rows whose "
        f"rest was small (least rest: {pct(rest.min(), 1)} of a row). This is a view, not the model: the model itself "
        "attends as on the left."
    )
    return {
        "grid": Captioned(with_subtitle(grid, subtitle, theme), grid_caption),
        "head": Captioned(with_subtitle(panels, subtitle, theme), panel_caption),
    }
