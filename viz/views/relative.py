"""Position inside the scores, for the encoders whose order is not (only) added to the embeddings: DeBERTa's score
split into its three terms, and T5's and MPNet's relative-position bias beside the content it is added to. Every
caption is computed from the numbers drawn."""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from viz.figures import heatmap_panels
from viz.figures.common import Theme, with_subtitle
from viz.figures.relative import score_split
from viz.figures.text import signed
from viz.views.attention import subtitle
from viz.views.base import Captioned, Source, ViewUnavailableError, view
from viz.views.captions import quoted_at

TERM_NAMES = {
    "content": "content→content (q·k)",
    "c2p": "content→position",
    "p2c": "position→content",
    "bias": "relative-position bias",
}


#: what the captions say first when the options switched positions off (Options(positions=False)): the run these
#: views split is not the text's
POSITIONS_ON = (
    "Positions are switched off for this text's run, so its scores hold no {what}; this view splits the scores "
    "of the same run with positions on (the other options kept). "
)


def _with_positions(src: Source, options):
    """The observation these views split: ``options``, positions on (switched off, they would leave nothing)."""
    return src.other(options=replace(options, positions=True))[0]


def _softmax(row: np.ndarray) -> np.ndarray:
    e = np.exp(row - row.max())
    return e / e.sum()


def _check(src: Source, layer: int, head: int, query: int) -> int:
    obs = src.obs
    if not (0 <= layer < obs.n_layers and 0 <= head < obs.n_heads):
        raise ViewUnavailableError(f"the model has {obs.n_layers} layers × {obs.n_heads} heads")
    return min(max(query, 0), obs.n_tokens - 1)


def split_caption(tokens: list[str], terms: dict[str, np.ndarray], query: int, what: str, verb: str = "make") -> str:
    """The sentence under a split: for the query's strongest key, how much of its score position made; across the
    row, position's share of the scores' size; and which key would win without position."""
    total = sum(terms.values())  # (M,)
    weights = _softmax(total)
    best = int(weights.argmax())
    parts = {k: float(v[best]) for k, v in terms.items()}
    size = sum(abs(v) for v in parts.values())
    position = sum(abs(v) for k, v in parts.items() if k != "content")
    share = position / size if size else 0.0
    listed = ", ".join(f"{TERM_NAMES[k]} {signed(v)}" for k, v in parts.items())  # 4.3e-03, never +0.00
    row_size = sum(np.abs(v) for v in terms.values())
    row_share = float((row_size - np.abs(terms["content"])).sum() / row_size.sum()) if row_size.sum() else 0.0
    alone = _softmax(terms["content"])
    other = int(alone.argmax())
    q, k = quoted_at(tokens, query), quoted_at(tokens, best)
    same = (
        f"weight {weights[best]:.2f} either way"
        if abs(alone[best] - weights[best]) < 0.005
        else (f"weight {alone[best]:.2f} instead of {weights[best]:.2f}")
    )
    without = (
        f"Without {what}, {q} would still look most at {k} ({same})."
        if other == best
        else f"Without {what}, {q} would look most at {quoted_at(tokens, other)} ({alone[other]:.2f}) instead of {k} "
        f"({weights[best]:.2f} now)."
    )
    return (
        f"For {q}, {share:.0%} of the score to {k}, its strongest key (weight {weights[best]:.2f}), comes from {what} "
        f"({listed}; score {signed(total[best])}). Across all {len(total)} keys, {what} {verb} {row_share:.0%} "
        f"of the scores' size. {without}"
    )


@view("pe.split", page="positional")
def pe_split(src: Source, theme: Theme, *, layer: int = 0, head: int = 0, query: int = 1):
    """DeBERTa: one head's scores split into content→content, content→position and position→content (each N × N,
    scaled as the model scales them) and their sum, then the query's row as stacked bars."""
    cfg = src.loaded.model.cfg
    if not cfg.disentangled:
        raise ViewUnavailableError("only DeBERTa's disentangled attention splits its scores into position terms")
    query = _check(src, layer, head, query)
    kinds = tuple(dict.fromkeys((*src.options.kinds, "scores", "c2p", "p2c")))
    obs = _with_positions(src, replace(src.options, kinds=kinds))
    scores = obs.scores[layer, head]  # (N, N)
    terms = {t: getattr(obs, t)[layer, head] for t in cfg.disentangled}  # each (N, N)
    content = scores - sum(terms.values())
    ordered = {"content": content, **{t: terms[t] for t in ("c2p", "p2c") if t in terms}}
    tokens = obs.tokens
    panels = [(m, tokens, tokens, TERM_NAMES[k]) for k, m in ordered.items()] + [(scores, tokens, tokens, "= score")]
    clip = float(np.quantile(np.abs(np.stack([m for m, *_ in panels])), 0.99)) or None
    title = f"Layer {layer}, head {head}: the scores split into their terms"
    maps = heatmap_panels(panels, title=title, theme=theme, diverging=True, zmax=clip, value_name="score",
                          shared_rows=True, columns=4)  # fmt: skip
    row = {k: m[query] for k, m in ordered.items()}
    what = "position terms"
    caption = split_caption(tokens, row, query, what)
    note = "" if src.options.positions else POSITIONS_ON.format(what=what)
    title = f"Query {quoted_at(tokens, query)}: each key's score, term by term"
    bars = score_split(
        tokens, row, TERM_NAMES, title=title, theme=theme, mark=int(_softmax(sum(row.values())).argmax())
    )
    sub = subtitle(src)
    return {
        "maps": Captioned(with_subtitle(maps, sub, theme), note + _maps_caption(ordered, scores)),
        "row": Captioned(with_subtitle(bars, sub, theme), note + caption),
    }


def _maps_caption(terms: dict[str, np.ndarray], scores: np.ndarray) -> str:
    size = {k: float(np.abs(v).mean()) for k, v in terms.items()}
    listed = ", ".join(f"{TERM_NAMES[k]} {v:.2f}" for k, v in size.items())
    return (
        f"Mean size of each term over the head's {scores.shape[0]} × {scores.shape[1]} scores: {listed}. The score "
        "is their sum (right); the softmax turns each row into weights."
    )


@view("pe.bias", page="positional")
def pe_bias(src: Source, theme: Theme, *, layer: int = 0, head: int = 0, query: int = 1):
    """T5, MPNet: one head's learned relative-position bias (the same in every layer) beside the content scores it
    is added to, their sum, and the query's row as stacked bars."""
    model = src.loaded.model
    if not model.cfg.relative_bias:
        raise ViewUnavailableError("only models with a relative-position bias (T5, MPNet) add one to their scores")
    query = _check(src, layer, head, query)
    obs = src.obs if src.options.positions else _with_positions(src, src.options)
    scores = obs.score_matrix(layer, head)  # (N, N), captured with the bias in it
    bias = bias_matrix(model, obs.n_tokens, head)  # (N, N)
    masked = ~np.isfinite(scores)
    content = np.where(masked, -np.inf, scores - bias)
    shown_bias = np.where(masked, -np.inf, bias)
    tokens = obs.tokens
    panels = [(content, tokens, tokens, TERM_NAMES["content"]), (shown_bias, tokens, tokens, "+ relative bias"),
              (scores, tokens, tokens, "= score")]  # fmt: skip
    finite = np.concatenate([m[np.isfinite(m)] for m, *_ in panels])
    clip = float(np.quantile(np.abs(finite), 0.99)) or None
    title = f"Layer {layer}, head {head}: content scores plus the relative-position bias"
    maps = heatmap_panels(panels, title=title, theme=theme, diverging=True, zmax=clip, value_name="score",
                          shared_rows=True, columns=3)  # fmt: skip
    keep = np.isfinite(scores[query])
    row_tokens = [t for t, k in zip(tokens, keep, strict=True) if k]
    row = {"content": content[query][keep], "bias": bias[query][keep]}
    at = int(keep[:query].sum())  # the query's own place among the keys it sees
    note = "" if src.options.positions else POSITIONS_ON.format(what="relative-position bias")
    caption = note + split_caption(row_tokens, row, at, "the relative bias", "makes")
    bars = score_split(row_tokens, row, TERM_NAMES, title=f"Query {quoted_at(tokens, query)}: content and bias per key",
                       theme=theme, mark=int(_softmax(sum(row.values())).argmax()))  # fmt: skip
    sub = subtitle(src)
    return {
        "maps": Captioned(with_subtitle(maps, sub, theme), note + bias_caption(model, bias, ~masked, head)),
        "row": Captioned(with_subtitle(bars, sub, theme), caption),
    }


def bias_matrix(model, n: int, head: int) -> np.ndarray:
    """The bias one head adds to the scores of n tokens (N, N), float32."""
    import torch

    with torch.inference_mode():
        bias = model.position_bias(n)[0, head]  # (N, N)
    return bias.float().cpu().numpy()


def bias_caption(model, bias: np.ndarray, drawn: np.ndarray, head: int) -> str:
    """What one head's bias (N, N), as drawn, favours by relative distance (key − query), over the distances this
    text has and the cells drawn (``drawn`` (N, N) bool: a decoder's keys after the query are masked, not counted)."""
    i, j = np.indices(bias.shape)
    seen = drawn
    dist = (j - i)[seen]
    values = bias[seen]
    by = {int(d): float(values[dist == d][0]) for d in np.unique(dist)}
    top, low = max(by, key=by.get), min(by, key=by.get)

    def where(d: int) -> str:
        return (
            "the query itself"
            if d == 0
            else f"keys {abs(d)} token{'s' * (abs(d) != 1)} {'after' if d > 0 else 'before'}"
        )

    buckets = model.cfg.rel_buckets
    return (
        f"Head {head}'s bias depends only on the distance key − query: it adds most ({by[top]:+.2f}) to {where(top)} "
        f"and least ({by[low]:+.2f}) to {where(low)}. Distances share {buckets} learned values (exact near the query, "
        f"log-spaced up to {model.cfg.rel_max_distance} tokens), the same in every layer."
    )
