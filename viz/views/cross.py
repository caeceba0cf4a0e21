"""An encoder–decoder's cross-attention on every page that opens its decoder: each target token (a query of the
decoder) over the source's tokens (the keys, the encoder's output), as BertViz shows cross-attention. The decoder's
self-attention is the ordinary views'; the encoder's is the same views with the encoder opened."""

from __future__ import annotations

import numpy as np

from viz.figures import attention_heatmap, model_overview
from viz.figures.common import Theme, with_subtitle
from viz.views.base import Captioned, Source, ViewUnavailableError, view
from viz.views.captions import quoted_at

#: at most this many target tokens are named in a caption
NAMED = 8


def source_tokens(src: Source) -> list[str]:
    """The source's tokens, the keys of the decoder's cross-attention (numbered when the model did not say)."""
    cross = _cross(src)
    named = list(src.loaded.info.get("source_tokens") or ())
    return named if len(named) == cross.shape[-1] else [str(i) for i in range(cross.shape[-1])]


def _cross(src: Source) -> np.ndarray:
    if src.obs.cross is None:
        raise ViewUnavailableError(
            "this model has no cross-attention: only an encoder–decoder's decoder reads a source (open a T5 or BART "
            "folder, or a run of “Watch it learn”'s date task)"
        )
    return src.obs.cross  # (L, H, N, S)


def _texts(src: Source) -> tuple[str, str]:
    """(the source the encoder read, the target the decoder writes), as text."""
    source = str(src.loaded.info.get("source_text", "")) or " ".join(source_tokens(src))
    return source, " ".join(src.obs.text.split())


def _subtitle(src: Source) -> str:
    source, target = _texts(src)
    return f"{src.loaded.name} · source “{source[:40]}” → target “{target[:40]}”"


def alignment_caption(weights: np.ndarray, queries: list[str], keys: list[str]) -> str:
    """Where each target token looks most in the source, from ``weights`` (N, S) as drawn."""
    best = weights.argmax(-1)  # (N,)
    parts = [f"{quoted_at(queries, i)}→{quoted_at(keys, j)} {weights[i, j]:.2f}" for i, j in enumerate(best[:NAMED])]
    more = f", … ({len(queries) - NAMED} more)" if len(queries) > NAMED else ""
    # a query's output predicts the next target token: does it look most at that token in the source?
    ahead = sum(keys[best[i]] == queries[i + 1] for i in range(len(queries) - 1))
    return (
        f"Rows: the target's tokens (the decoder's queries), each summing to 1 over the source's {len(keys)} tokens. "
        f"Strongest per row: {', '.join(parts)}{more}; mean row maximum {float(weights.max(-1).mean()):.2f}. "
        f"{ahead} of {len(queries) - 1} rows look most at the source token the target writes next."
    )


@view("cross", page="attention")
def cross(src: Source, theme: Theme, *, layer: int = 0, head: int = 0):
    """One head's cross-attention: the target's tokens down the side, the source's along the bottom."""
    patterns = _cross(src)
    if not (0 <= layer < patterns.shape[0] and 0 <= head < patterns.shape[1]):
        raise ViewUnavailableError(f"the decoder has {patterns.shape[0]} layers × {patterns.shape[1]} heads")
    obs, keys = src.obs, source_tokens(src)
    rows = obs.keep(src.hide_special)
    weights = patterns[layer, head][rows]  # (n, S): the shown target tokens' rows
    queries = [obs.tokens[i] for i in rows]
    fig = attention_heatmap(
        weights,
        queries,
        key_tokens=keys,
        title=f"Layer {layer}, head {head} — cross-attention, target on source",
        theme=theme.exact(),
        zmin=0,
        zmax=1,
        axis_titles=("source token (key)", "target token (query)"),
    )
    source, target = _texts(src)
    # a slide shows the caption without the subtitle's small print: the caption names what was read and written
    caption = f"Reading the source “{source}”, the decoder writes “{target}”. " + alignment_caption(
        weights, queries, keys
    )
    note = src.loaded.info.get("source_note")
    return Captioned(with_subtitle(fig, _subtitle(src), theme), f"{caption} {note}" if note else caption)


@view("cross_overview", page="attention")
def cross_overview(src: Source, theme: Theme, *, layer: int = 0, head: int = 0):
    """Every decoder head's cross-attention at a glance (the chosen one outlined)."""
    patterns = _cross(src)
    fig = model_overview(patterns, title="Every head's cross-attention", theme=theme, selected=(layer, head))
    on_diagonal = _best_aligned(patterns)
    caption = (
        f"{patterns.shape[0]} layers × {patterns.shape[1]} heads, each on its own colour scale; the sharpest "
        f"cross-attention head is L{on_diagonal[0]}H{on_diagonal[1]} (its rows' largest weight is "
        f"{on_diagonal[2]:.2f} on average)."
    )
    return Captioned(with_subtitle(fig, _subtitle(src), theme), caption)


def _best_aligned(patterns: np.ndarray) -> tuple[int, int, float]:
    """(layer, head, mean of its rows' largest weight) of the head whose rows are most concentrated."""
    sharp = patterns.max(-1).mean(-1)  # (L, H)
    layer, head = np.unravel_index(int(np.argmax(sharp)), sharp.shape)
    return int(layer), int(head), float(sharp[layer, head])


@view("cross_metrics", page="metrics")
def cross_metrics_view(src: Source, theme: Theme, *, metric: str = "focus"):
    """One statistic of every decoder head's cross-attention, layers down, heads across (click a cell: that head)."""
    from model.analysis.cross import CROSS_METRICS, cross_metrics
    from viz.figures.causes import signed_grid

    patterns = _cross(src)
    if metric not in CROSS_METRICS:
        raise ViewUnavailableError(f"unknown cross-attention metric {metric!r}: {', '.join(CROSS_METRICS)}")
    obs, keys = src.obs, source_tokens(src)
    values = cross_metrics(patterns, obs.tokens, keys)[metric]  # (L, H)
    L, H = values.shape
    monotone = metric == "monotone"
    fig = signed_grid(
        values, [f"layer {i}" for i in range(L)], [f"head {h}" for h in range(H)],
        title=f"Cross-attention: {metric}, every decoder head", value_name=metric,
        zmax=1.0, cell_ids=np.stack(np.indices((L, H)), -1), where="layer %{y}, %{x}", x_title="head",
        y_title="layer", theme=theme, signed=monotone,
    )  # fmt: skip
    finite = np.isfinite(values)
    if not finite.any():
        caption = f"{metric.capitalize()} needs at least three target tokens with different strongest source tokens."
    else:
        lay, hd = np.unravel_index(np.nanargmax(values), values.shape)
        caption = (
            f"{metric.capitalize()}: {CROSS_METRICS[metric]}. Highest: L{lay}H{hd} at {values[lay, hd]:.2f}; "
            f"median over the {int(finite.sum())} heads {float(np.nanmedian(values)):.2f}; over the source's "
            f"{len(keys)} tokens and the target's {obs.n_tokens}."
        )
    return Captioned(with_subtitle(fig, _subtitle(src), theme), caption)
