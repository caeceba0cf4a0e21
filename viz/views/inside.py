"""Views of why attention goes where it goes: one head's computation step by step, one query, the Q/K
plane, value norms; and across layers, rollout and flow."""

from __future__ import annotations

import numpy as np

from model.analysis.flow import MAX_FLOW_TOKENS, attention_rollout
from model.analysis.norms import value_contributions
from model.analysis.projection import align_keys, pca_2d
from model.analysis.steps import explain_query
from viz.figures import (
    attention_heatmap,
    heatmap_panels,
    matrix_heatmap,
    qk_scatter,
    query_explained,
    weights_vs_contributions,
)
from viz.figures.common import Theme, with_subtitle
from viz.views.attention import cell_ids, shown_focus, subtitle
from viz.views.base import Captioned, Source, ViewUnavailableError, view
from viz.views.captions import one_query, qk_plane, repeated, value_norms, weighed
from viz.views.focus import position_name, scale_symbol, scores_caption


def _steps(src: Source, layer: int, head: int):
    obs = src.full()
    if obs.q is None or obs.attn_in is None:
        raise ViewUnavailableError("Q, K and V were not captured for this text")
    if not (0 <= layer < obs.n_layers and 0 <= head < obs.n_heads):
        raise ViewUnavailableError(f"the model has {obs.n_layers} layers × {obs.n_heads} heads")
    return src.steps(layer, head)


@view("qkv.x", page="qkv")
def qkv_x(src: Source, theme: Theme, *, layer: int = 0):
    steps, _ = _steps(src, layer, 0)
    fig = matrix_heatmap(steps.x, src.obs.tokens, title=f"X: what attention reads in layer {layer}", theme=theme)
    return with_subtitle(fig, subtitle(src), theme)


@view("qkv.projections", page="qkv")
def qkv_projections(src: Source, theme: Theme, *, layer: int = 0, head: int = 0):
    """Q, K and V of one head side by side on one colour scale."""
    steps, _ = _steps(src, layer, head)
    tokens = src.obs.tokens
    fig = heatmap_panels(
        [
            (steps.q, tokens, None, "Q = X·W_q"),
            (steps.k, tokens, None, "K = X·W_k"),
            (steps.v, tokens, None, "V = X·W_v"),
        ],
        title=f"Queries, keys and values of layer {layer}, head {head} — each ({steps.q.shape[0]}, {steps.q.shape[1]})",
        theme=theme,
        diverging=True,
        value_name="value",
        shared_rows=True,
    )
    return with_subtitle(fig, subtitle(src), theme)


@view("qkv.scores", page="qkv")
def qkv_scores(src: Source, theme: Theme, *, layer: int = 0, head: int = 0, query: int = -1, key: int = -1):
    """QKᵀ, then scaled, then masked: three panels on one colour scale; the focus query and key are always
    labelled."""
    steps, _ = _steps(src, layer, head)
    tokens = src.obs.tokens
    cfg = src.loaded.model.cfg
    scaled = scale_symbol(cfg, src.options.scale) + (f", capped ±{cfg.attn_softcap:g}" if cfg.attn_softcap else "")
    q, k = (i if 0 <= i < len(tokens) else -1 for i in (query, key))
    panels = [(steps.qk, tokens, tokens, "QKᵀ"), (steps.scaled, tokens, tokens, f"QKᵀ {scaled}")]
    if steps.position is not None:  # T5, MPNet, DeBERTa: position enters the scores here, not through q and k
        panels.append((steps.scaled + steps.position, tokens, tokens, f"+ {position_name(cfg)}"))
    panels.append((steps.masked, tokens, tokens, "+ mask (−∞ grey)"))
    fig = heatmap_panels(
        panels,
        title=f"From dot products to scores: layer {layer}, head {head}",
        theme=theme,
        diverging=True,
        value_name="score",
        shared_rows=True,
        keep=([q], [k]),
    )
    d_k = steps.q.shape[-1]
    caption = scores_caption(
        tokens, steps.qk, steps.scaled, q, k, d_k, src.options.scale, cfg, steps.masked, steps.position
    )
    return Captioned(with_subtitle(fig, subtitle(src), theme), caption)


@view("qkv.softmax", page="qkv")
def qkv_softmax(src: Source, theme: Theme, *, layer: int = 0, head: int = 0, query: int = -1, key: int = -1):
    steps, _ = _steps(src, layer, head)
    share = None if steps.sink is None else float(steps.sink.mean())
    beside = "" if share is None else f" · the learned sink takes {share:.0%} of a row on average"
    fig = attention_heatmap(
        steps.pattern,
        src.obs.tokens,
        title=f"softmax (layer {layer}, head {head}): the weights{beside}",
        theme=theme,
        focus=shown_focus(src, query, key, hide=False),
        cell_ids=cell_ids(src, hide=False),
        masked=np.isneginf(steps.masked),
    )
    return with_subtitle(fig, subtitle(src), theme)


@view("qkv.z", page="qkv")
def qkv_z(src: Source, theme: Theme, *, layer: int = 0, head: int = 0):
    steps, _ = _steps(src, layer, head)
    fig = matrix_heatmap(
        steps.z, src.obs.tokens, title=f"head output = softmax · V (layer {layer}, head {head})", theme=theme
    )
    return with_subtitle(fig, subtitle(src), theme)


@view("qkv.output", page="qkv")
def qkv_output(src: Source, theme: Theme, *, layer: int = 0):
    """Every head's output side by side (concat) and that times W_o: the attention sublayer's output."""
    steps, _ = _steps(src, layer, 0)
    tokens, n_heads = src.obs.tokens, src.obs.n_heads
    fig = heatmap_panels(
        [(steps.concat, tokens, None, f"concat of {n_heads} heads"), (steps.out, tokens, None, "· W_o")],
        title=f"Heads together: the output of attention in layer {layer}",
        theme=theme,
        diverging=True,
        value_name="value",
        shared_rows=True,
    )
    return with_subtitle(fig, subtitle(src), theme)


@view("qkv.query", page="qkv")
def qkv_query(src: Source, theme: Theme, *, layer: int = 0, head: int = 0, query: int = 1):
    steps, weights = _steps(src, layer, head)
    obs = src.obs
    query = min(max(query, 0), obs.n_tokens - 1)
    full = src.full()
    row = full.score_matrix(layer, head)[query]
    position = None if steps.position is None else steps.position[query]
    qe = explain_query(
        steps.q, steps.k, query, row, src.options.scale, full.score_factor, full.softcap, position, weights.get("sink")
    )
    at = query if repeated(obs.tokens, query) else None  # the title says which “the” where the text has two
    fig = query_explained(qe, obs.tokens, obs.tokens[query], at=at, theme=theme)
    caption = one_query(obs.tokens, query, steps.pattern[query])
    return Captioned(with_subtitle(fig, f"layer {layer}, head {head} · " + subtitle(src), theme), caption)


@view("qkv.plane", page="qkv")
def qkv_plane(src: Source, theme: Theme, *, layer: int = 0, head: int = 0, query: int = 1):
    """Queries and keys, aligned (no weight changes), in one PCA plane; the chosen query and the keys it weighs
    most carry labels. The caption says how well closeness in the plane matches the weights."""
    steps, _ = _steps(src, layer, head)
    obs = src.obs
    n = obs.n_tokens
    query = min(max(query, 0), n - 1)
    q, k, c = align_keys(steps.q, steps.k)
    coords, ratio = pca_2d(np.concatenate([q, k]))  # (2N, 2): queries, then keys
    top_keys = weighed(steps.pattern[query])[:3]  # labels only on keys the query sees
    fig = qk_scatter(
        coords[:n],
        coords[n:],
        obs.tokens,
        ratio,
        labelled=[query],
        labelled_keys=top_keys.tolist(),
        title=f"Queries and keys of L{layer} H{head} in one PCA plane (keys aligned)",
        theme=theme,
    )
    caption = qk_plane(obs.tokens, query, steps.pattern[query], coords[:n], coords[n:], ratio, c)
    return Captioned(with_subtitle(fig, subtitle(src), theme), caption)


@view("qkv.values", page="qkv")
def qkv_values(src: Source, theme: Theme, *, layer: int = 0, head: int = 0):
    steps, weights = _steps(src, layer, head)
    contrib, _ = value_contributions(steps.pattern, steps.v, weights["w_o"])
    fig = weights_vs_contributions(
        steps.pattern,
        contrib,
        src.obs.tokens,
        title=f"L{layer} H{head}: weight vs what each key really contributes",
        theme=theme,
    )
    caption = value_norms(src.obs.tokens, steps.pattern, contrib)
    return Captioned(with_subtitle(fig, subtitle(src), theme), caption)


@view("rollout", page="rollout")
def rollout(src: Source, theme: Theme, *, query: int = -1, key: int = -1):
    obs = src.obs
    fig = attention_heatmap(
        attention_rollout(obs.patterns),
        obs.tokens,
        title=f"Attention rollout through {obs.n_layers} layers",
        theme=theme,
        focus=shown_focus(src, query, key, hide=False),
        cell_ids=cell_ids(src, hide=False),
    )
    return with_subtitle(fig, subtitle(src), theme)


@view("flow", page="rollout")
def flow(src: Source, theme: Theme):
    obs = src.obs
    if obs.n_tokens > MAX_FLOW_TOKENS:
        raise ViewUnavailableError(
            f"Attention flow solves {obs.n_tokens}² max-flow problems; it is offered up to {MAX_FLOW_TOKENS} "
            f"tokens so it stays within a few seconds. This text has {obs.n_tokens}: shorten it, or use rollout."
        )
    fig = attention_heatmap(src.flow(), obs.tokens, title="Attention flow (max-flow, rows normalised)", theme=theme)
    return with_subtitle(fig, subtitle(src), theme)
