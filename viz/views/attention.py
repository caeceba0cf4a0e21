"""Views of where attention goes: one head, every head of a layer, the mean, the head view, the overview,
comparisons and head similarity."""

from __future__ import annotations

import numpy as np

from model.analysis.sinks import sink_keys, without_keys
from viz.figures import (
    attention_heatmap,
    heads_grid,
    model_overview,
    similarity_matrix,
)
from viz.figures.common import Theme, with_subtitle
from viz.figures.query import query_in_heads
from viz.figures.text import pct
from viz.views import long as long_views
from viz.views.base import Captioned, Source, ViewUnavailableError, view
from viz.views.captions import quoted, quoted_at
from viz.views.focus import focus_caption, score_label, sink_caption, softcap_caption
from viz.views.windows import layer_kinds, layer_labels, window_caption

MODES = ("weights", "scores")


def subtitle(src: Source, text: str | None = None, name: str | None = None) -> str:
    """The model and the text a figure shows (shortened), so that a figure stands on its own on a slide."""
    text = " ".join((src.obs.text if text is None else text).split())
    return f"{name or src.loaded.name} · “{text[:70]}{'…' if len(text) > 70 else ''}”"


def shown_focus(src: Source, query: int, key: int, hide: bool | None = None) -> tuple[int, int]:
    """The focus query and key (token positions, -1: none) as positions among the shown tokens."""
    keep = src.obs.keep(src.hide_special if hide is None else hide)
    where = {int(t): i for i, t in enumerate(keep)}
    return where.get(query, -1), where.get(key, -1)


def cell_ids(src: Source, hide: bool | None = None) -> np.ndarray:
    """(n, n, 2): the (query, key) token positions of each shown cell, what a click on it reports."""
    keep = src.obs.keep(src.hide_special if hide is None else hide)
    return np.stack(np.meshgrid(keep, keep, indexing="ij"), axis=-1)


def _check(src: Source, layer: int, head: int) -> None:
    obs = src.obs
    if not (0 <= layer < obs.n_layers and 0 <= head < obs.n_heads):
        raise ViewUnavailableError(
            f"the model has {obs.n_layers} layers × {obs.n_heads} heads; no layer {layer}, head {head}"
        )


@view("attention", page="attention")
def attention(
    src: Source,
    theme: Theme,
    *,
    layer: int = 0,
    head: int = 0,
    mode: str = "weights",
    query: int = -1,
    key: int = -1,
    without_sink: bool = False,
    span: tuple[int, ...] = (),
    cells: str = "mean",
):
    """One head, always at full resolution; ``query``/``key``: the tokens in focus (outlined; clicking a cell
    focuses its row and column). ``without_sink``: the weights with the sink keys' columns removed and each row
    rescaled to sum to 1 (a view, captioned as one). A text read whole (``src.long``): block means (``cells="max"``:
    maxima) of every token, or exact in ``span`` (first query, end, first key, end)."""
    _check(src, layer, head)
    if src.long is not None:
        if without_sink:
            raise ViewUnavailableError("“Renormalise without the sink” is drawn on the first tokens' map only.")
        return long_views.attention(src, theme, layer, head, mode, query, key, span, cells, subtitle(src))
    theme = theme.exact()
    obs, hide = src.obs, src.hide_special
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}")
    cfg = src.loaded.model.cfg
    name = f"Layer {layer} (sliding window {cfg.sliding_window})" if cfg.is_sliding(layer) else f"Layer {layer}"
    name += " (NoPE)" if layer in cfg.nope_layers else ""
    if mode == "scores":
        full = obs if obs.scores is not None else src.full()  # one head's scores come from its q and k
        label = score_label(cfg, src.options.scale)
        fig = attention_heatmap(
            obs.shown(full.score_matrix(layer, head), hide),
            obs.shown_tokens(hide),
            mode="scores",
            title=f"{name}, head {head} — scores {label}",
            theme=theme,
            focus=shown_focus(src, query, key),
            cell_ids=cell_ids(src),
        )
    elif without_sink:
        return _without_sink(src, theme, layer, head, query, key)
    else:
        fig = attention_heatmap(
            obs.shown(obs.patterns[layer, head], hide),
            obs.shown_tokens(hide),
            title=f"{name}, head {head} — attention weights",
            theme=theme,
            focus=shown_focus(src, query, key),
            cell_ids=cell_ids(src),
            masked=obs.shown(obs.blocked(layer), hide),
            sink=None if obs.sink is None else obs.sink[layer, head][obs.keep(hide)],
        )
    fig = with_subtitle(fig, subtitle(src), theme)
    # the numbers drawn, whole (a slide may show a window of them; scores: −inf shown grey)
    matrix = obs.shown(full.score_matrix(layer, head) if mode == "scores" else obs.patterns[layer, head], hide)
    q, k = shown_focus(src, query, key)
    caption = focus_caption(obs.shown_tokens(hide), matrix, q, k, layer, head, mode)
    if cfg.is_sliding(layer):
        caption += " " + window_caption(layer, cfg.sliding_window, obs.patterns[layer, head], obs.causal)
    if obs.sink is not None and mode != "scores":
        caption += " " + sink_caption(obs.sink[layer, head][obs.keep(hide)], obs.shown_tokens(hide))
    if layer in cfg.nope_layers:
        caption += (
            f" Layer {layer} gets no positions (NoPE): its q and k are not rotated, so only the tokens' content and "
            "the mask tell its keys apart."
        )
    if mode == "scores" and cfg.attn_softcap:
        caption += " " + softcap_caption(matrix, cfg.attn_softcap)
    return Captioned(fig, caption)


def _without_sink(src: Source, theme: Theme, layer: int, head: int, query: int, key: int) -> Captioned:
    obs, hide = src.obs, src.hide_special
    keys = sink_keys(obs.tokens, obs.special, obs.causal)
    names = sorted({obs.tokens[i] for i in np.flatnonzero(keys)}, key=obs.tokens.index)
    if not keys.any():
        raise ViewUnavailableError("this text has no sink token to remove (no special tokens, and no causal mask)")
    pattern = obs.patterns[layer, head]
    removed = pattern[:, keys].sum(-1)  # (N,) each row's weight on the sink keys
    fig = attention_heatmap(
        obs.shown(without_keys(pattern, keys), hide),
        obs.shown_tokens(hide),
        title=f"Layer {layer}, head {head} — weights without {', '.join(names)}, rows rescaled",
        theme=theme,
        focus=shown_focus(src, query, key),
        cell_ids=cell_ids(src),
    )
    empty = int((removed > 1 - 1e-6).sum())
    caption = (
        f"A view, not what the model computes: the weight on {', '.join(names)} (on average {pct(removed.mean())} "
        f"of a row here, at most {pct(removed.max())}) is removed and each row rescaled to sum to 1, to show where "
        "the rest goes." + (f" {empty} row(s) had all their weight there and are left empty." if empty else "")
    )
    return Captioned(with_subtitle(fig, subtitle(src), theme), caption)


@view("heads", page="attention")
def heads(src: Source, theme: Theme, *, layer: int = 0, query: int = -1):
    """Every head of a layer as a grid of maps; on a slide, with a ``query`` (token position) chosen, one map of
    that query's row in every head instead (the grid's small panels do not read from the back row)."""
    _check(src, layer, 0)
    if src.long is not None:
        return long_views.heads(src, theme, layer, subtitle(src))
    obs = src.obs
    if theme.box and 0 <= query < obs.n_tokens:
        shown = obs.keep(src.hide_special)
        rows = obs.patterns[layer][:, query, shown]  # (H, n): the query's row over the shown keys
        labels, at = obs.shown_tokens(src.hide_special), shown_focus(src, query, -1)[0]
        name = quoted_at(labels, at) if at >= 0 else quoted(obs.tokens[query])  # its position as the axis labels it
        fig = query_in_heads(
            rows,
            labels,
            name,
            title=f"Layer {layer}: where {name} looks in every head",
            theme=theme,
        )
        return with_subtitle(fig, subtitle(src), theme)
    fig = heads_grid(
        obs.shown(obs.patterns[layer], src.hide_special),
        obs.shown_tokens(src.hide_special),
        title=f"Layer {layer}: every head",
        theme=theme,
        cols=min(4, obs.n_heads),
    )
    return with_subtitle(fig, subtitle(src), theme)


@view("mean", page="attention")
def mean(src: Source, theme: Theme, *, layer: int = 0, query: int = -1, key: int = -1):
    _check(src, layer, 0)
    if src.long is not None:
        return long_views.mean(src, theme, layer, query, key, subtitle(src))
    obs = src.obs
    fig = attention_heatmap(
        obs.shown(obs.patterns[layer], src.hide_special).mean(0),
        obs.shown_tokens(src.hide_special),
        title=f"Layer {layer}: mean over {obs.n_heads} heads",
        theme=theme,
        focus=shown_focus(src, query, key),
        cell_ids=cell_ids(src),
        masked=obs.shown(obs.blocked(layer), src.hide_special),
    )
    return with_subtitle(fig, subtitle(src), theme)


@view("overview", page="overview")
def overview(src: Source, theme: Theme, *, layer: int = 0, head: int = 0):
    """The focus head (layer, head) is outlined."""
    cfg = src.loaded.model.cfg
    title = f"{src.loaded.name}: every head" + layer_kinds(cfg)
    labels = layer_labels(cfg)
    if src.long is not None:
        return long_views.overview(src, theme, layer, head, title, labels, subtitle(src))
    fig = model_overview(
        src.obs.shown(src.obs.patterns, src.hide_special), title=title, theme=theme, selected=(layer, head),
        layer_labels=labels,
    )  # fmt: skip
    return with_subtitle(fig, subtitle(src), theme)


@view("similarity", page="metrics")
def similarity(src: Source, theme: Theme):
    dist, pairs, order = src.similarity()
    fig = similarity_matrix(
        dist,
        [f"L{i}H{j}" for i, j in pairs],
        order=order,
        cell_ids=pairs,
        title="Head similarity (JS distance)",
        theme=theme,
    )
    compared = "rows renormalised over the shown tokens (special tokens hidden)" if src.hide_special else "every token"
    if src.long is not None:
        long = src.long
        compared = f"{len(long.sample_rows)} evenly spaced rows of {long.n_tokens:,}, keys pooled by {long.width}"
    fig = with_subtitle(fig, f"{compared} · " + subtitle(src), theme)
    broken = [pairs[i] for i in np.flatnonzero(np.isnan(dist).all(0))]
    if not broken:
        return fig
    names = ", ".join(f"L{a}H{b}" for a, b in broken[:6]) + (f" and {len(broken) - 6} more" if len(broken) > 6 else "")
    caption = (
        f"{len(broken)} of {len(pairs)} heads are not computable (their weights are NaN or Inf): {names}. They "
        "compare with nothing, so they are drawn blank and last, not as identical."
    )
    return Captioned(fig, caption)
