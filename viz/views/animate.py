"""The animation of one head, step by step with the real numbers of the text: tokens → embeddings (+ positions)
→ X → Q, K, V → one query's q·k against every key → ÷√d_k → mask → softmax → weights × V → concat → W_o.

Each step is one frame, a view like any other (``anim.frame`` with its ``step``): the page plays them, the export
renders the same views into GIF, MP4 and numbered PNGs, and every frame's caption is computed from its numbers.
Long texts are windowed: WINDOW tokens around the query.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import replace

import numpy as np

from model.analysis.stream import embedding_parts
from viz.figures.common import Theme, with_subtitle
from viz.figures.frames import key_bars, with_pipeline
from viz.figures.grids import heatmap_panels
from viz.figures.layout import add_shapes, relayout
from viz.views.attention import subtitle
from viz.views.base import Captioned, Source, ViewUnavailableError, view
from viz.views.captions import quoted_at, weighed
from viz.views.focus import own_scale, position_name, scaling_words

STEPS = ("embeddings", "X", "Q", "K", "V", "q·k", "÷√d_k", "mask", "softmax", "·V", "concat", "·W_o")
WINDOW = 16  # tokens a frame shows around the query
HEIGHT, FRAME_WIDTH = 560, 1240  # every frame the same size, so that the animation does not jump


def window(n: int, query: int, size: int = WINDOW) -> tuple[int, int]:
    """(start, stop) of ``size`` tokens around ``query`` (all of them when the text is short)."""
    if n <= size:
        return 0, n
    start = min(max(query - size // 2, 0), n - size)
    return start, start + size


def _labels(tokens: list[str], positions: str) -> list[str]:
    """Labels with their position in the whole text ("it·9") as the theme asks, so a window keeps true positions."""
    counts = Counter(tokens)
    return [
        f"{t}·{i}" if positions == "all" or (positions == "duplicates" and counts[t] > 1) else t
        for i, t in enumerate(tokens)
    ]


def _mark_row(fig, row: int, panels: int) -> None:
    """An orange outline round row ``row`` (the query) of the first ``panels`` panels."""
    shapes = []
    for i in range(1, panels + 1):
        suffix = "" if i == 1 else str(i)
        shapes.append(
            {
                "type": "rect",
                "xref": f"x{suffix} domain",
                "yref": f"y{suffix}",
                "x0": 0,
                "x1": 1,
                "y0": row - 0.5,
                "y1": row + 0.5,
                "line": {"color": "#e8590c", "width": 3},
            }
        )
    add_shapes(fig, *shapes)


@view("anim.frame", page="animate")
def frame(src: Source, theme: Theme, *, layer: int = 0, head: int = 0, query: int = 1, step: int = 0):
    """One step of the animation (``step`` 0 … len(STEPS) − 1)."""
    obs = src.full()
    if obs.q is None or obs.attn_in is None:
        raise ViewUnavailableError("Q, K and V were not captured for this text")
    if not (0 <= layer < obs.n_layers and 0 <= head < obs.n_heads):
        raise ViewUnavailableError(f"the model has {obs.n_layers} layers × {obs.n_heads} heads")
    if not 0 <= step < len(STEPS):
        raise ViewUnavailableError(f"the animation has steps 0 to {len(STEPS) - 1}")
    steps, _ = src.steps(layer, head)
    n = obs.n_tokens
    q = min(max(query, 0), n - 1)
    a, b = window(n, q)
    labels = _labels(obs.tokens, theme.positions)
    rows, r = labels[a:b], q - a  # the window's labels; the query's row in it
    flat = replace(theme.exact(), positions="none")  # at most WINDOW rows: exact; labels carry their positions
    name = quoted_at(obs.tokens, q)
    cfg = src.loaded.model.cfg
    d_k = steps.q.shape[1]
    where = f"tokens {a}–{b - 1} of {n} · " if (a, b) != (0, n) else ""
    head_line = f"layer {layer}, head {head}, query {q} {name}"
    title = f"Step {step + 1}/{len(STEPS)}: " + _title(step, d_k, cfg)

    def panels(items, diverging=True, value="value", zmax=None):
        fig = heatmap_panels(
            items, title=title, theme=flat, diverging=diverging, value_name=value, height=HEIGHT, zmax=zmax
        )
        return fig

    s = STEPS[step]
    if s == "embeddings":
        parts = embedding_parts(src.loaded.model, obs.ids)
        items = [(parts["token"][a:b], rows, None, "token embedding" + _times(cfg))]
        if parts["position"] is not None:
            items.append((parts["position"][a:b], rows, None, f"+ {cfg.positional} position"))
        if cfg.embedding_layer_norm:  # BERT's: the sum is normalised next (X shows it): its values are another scale
            items.append((parts["added"][a:b], rows, None, "= their sum (LayerNorm-ed next)"))
        else:
            items.append((parts["sum"][a:b], rows, None, "= what layer 0 reads from"))
        # a few large entries of the token embeddings would wash out the position's ±1 on a max-scaled colour bar:
        # the 99th percentile keeps every panel readable (the rare larger cells saturate at the bar's ends)
        every = np.concatenate([np.abs(np.asarray(m, dtype=np.float64)).ravel() for m, *_ in items])
        fig = panels(items, zmax=float(np.percentile(every, 99)) or None)
        _mark_row(fig, r, len(items))
        caption = _embed_caption(parts, q, name, obs.ids[q], cfg)
    elif s in ("X", "Q", "K", "V"):
        upto = {"X": 0, "Q": 1, "K": 2, "V": 3}[s]
        mats = [
            (steps.x[a:b], rows, None, f"X ({steps.x.shape[1]} dims)"),
            (steps.q[a:b], rows, None, "Q = X·W_q"),
            (steps.k[a:b], rows, None, "K = X·W_k"),
            (steps.v[a:b], rows, None, "V = X·W_v"),
        ]
        shown = mats[:1] if upto == 0 else mats[1 : upto + 1]
        fig = panels(shown)
        _mark_row(fig, r, 1)  # the query row of X, or of Q
        caption = _qkv_caption(s, steps, q, name, layer, cfg, obs)
    elif s in ("q·k", "÷√d_k", "mask", "softmax"):
        row = {"q·k": steps.qk, "÷√d_k": steps.scaled, "mask": steps.masked, "softmax": steps.pattern}[s][q]
        masked = np.isneginf(steps.masked[q]) if s in ("mask", "softmax") else None
        finite = np.concatenate([steps.qk[q], steps.scaled[q], steps.masked[q][np.isfinite(steps.masked[q])]])
        y_range = (0.0, 1.0) if s == "softmax" else (float(finite.min()), float(finite.max()))
        best = (
            int(np.argmax(np.where(np.isneginf(steps.masked[q]), -np.inf, row))) if s != "q·k" else int(np.argmax(row))
        )
        scaled_name = "q·k / √d_k" if not own_scale(cfg) else f"q·k × {own_scale(cfg):.3g}"
        y_title = {"q·k": "q·k", "÷√d_k": scaled_name, "mask": "score", "softmax": "weight"}[s]
        fig = key_bars(
            rows,
            row[a:b],
            masked=None if masked is None else masked[a:b],
            highlight=best - a if a <= best < b else None,
            y_title=y_title,
            y_range=y_range,
            title=title,
            theme=flat,
            height=HEIGHT,
        )
        caption = _score_caption(s, steps, q, obs.tokens, d_k, src.options.scale, obs.causal, cfg)
    elif s == "·V":
        w = steps.pattern[q][:, None] * steps.v  # (N, d_k): each key's value scaled by its weight
        stacked = np.concatenate([w[a:b], steps.z[q : q + 1]])  # (M + 1, d_k): the terms, then their sum
        fig = panels(
            [(stacked, [*rows, "= z (the sum)"], None, f"weight × value of each key, summed for {obs.tokens[q]}")]
        )
        _mark_row(fig, b - a, 1)
        share = np.linalg.norm(w, axis=1)
        top = int(np.argmax(share))
        caption = (
            f"z = Σ_j w_j · v_j: the head's output for {name} is the weighted sum of the values; the largest term "
            f"comes from {quoted_at(obs.tokens, top)} (‖w·v‖ = {share[top]:.2f} of Σ {share.sum():.2f}); ‖z‖ = "
            f"{np.linalg.norm(steps.z[q]):.2f}."
        )
    elif s == "concat":
        z_all = steps.concat[q].reshape(obs.n_heads, d_k)  # (H, d_k): every head's z for this query
        fig = panels([(z_all, [f"head {h}" for h in range(obs.n_heads)], None, f"every head's z for {obs.tokens[q]}")])
        _mark_row(fig, head, 1)
        caption = (
            f"concat: the {obs.n_heads} heads of layer {layer} each give {name} {d_k} numbers; side by side they are "
            f"{obs.n_heads * d_k} numbers (this head's: row {head}, columns {head * d_k}–{(head + 1) * d_k - 1})."
        )
    else:
        out = steps.out[q : q + 1]
        fig = panels([(steps.concat[a:b], rows, None, "concat (all heads)"), (steps.out[a:b], rows, None, "· W_o")])
        _mark_row(fig, r, 2)
        err = float(np.abs(steps.out[q] - src.full().attn_out[layer][q]).max())
        added = "added to the stream" if cfg.norm == "pre" else "added to the stream, then normalised (post-norm)"
        caption = (
            f"· W_o: a {steps.concat.shape[1]} × {steps.out.shape[1]} matrix mixes the heads back into the stream's "
            f"{steps.out.shape[1]} dimensions: the attention output for {name} (norm {np.linalg.norm(out):.2f}) is "
            f"{added}. It matches the model's own forward pass to {err:.1e}."
        )
    if not theme.box:  # every frame the same size in a file, so that a GIF or MP4 does not jump
        relayout(fig, meta={**(fig.layout.meta or {}), "width": FRAME_WIDTH})
    fig = with_subtitle(fig, f"{where}{head_line} · " + subtitle(src), flat)
    names = [n if n != "÷√d_k" or not own_scale(cfg) else f"×{own_scale(cfg):.3g}" for n in STEPS]  # the real scale
    return Captioned(with_pipeline(fig, names, step, flat), caption)


TITLES = (
    "tokens become vectors",
    "X, what attention reads",
    "each token's query",
    "each token's key",
    "each token's value",
    "the query against every key",
    "divide by √d_k = √{d_k}",
    "the mask",
    "softmax: scores become weights",
    "weights × values",
    "concatenate the heads",
    "mix the heads: · W_o",
)


def _times(cfg) -> str:
    """What the token embedding rows are multiplied by before layer 0 reads them."""
    return (" × √d" if cfg.scale_embeddings else "") + (
        f" × {cfg.embed_multiplier:g}" if cfg.embed_multiplier != 1 else ""
    )


def _embed_caption(parts, q: int, name: str, token_id: int, cfg) -> str:
    tok = float(np.linalg.norm(parts["token"][q]))
    total = float(np.linalg.norm(parts["sum"][q]))
    scaled = f" times √{cfg.d_model}" if cfg.scale_embeddings else ""
    scaled += f" times {cfg.embed_multiplier:g} (its embedding multiplier)" if cfg.embed_multiplier != 1 else ""
    if parts["position"] is not None:
        pos = f" plus its position's vector (norm {np.linalg.norm(parts['position'][q]):.2f})"
    elif cfg.positional == "rope":
        pos = "; its position enters later, as a rotation of q and k (RoPE)"
    elif cfg.relative_bias or cfg.disentangled:
        inside = "a learned bias per distance" if cfg.relative_bias else "content→position and position→content terms"
        pos = f"; its position enters later, inside the scores ({inside})"
    else:
        pos = "; the model adds no position"
    norm = " after the embedding norm" if cfg.embedding_layer_norm else ""
    read = "the sum" if parts["position"] is not None else "it"
    return (
        f"{name} is row {token_id} of the {cfg.vocab_size:,} × {cfg.d_model} embedding table{scaled} (norm {tok:.2f})"
        f"{pos}; layer 0 reads {read}{norm} (norm {total:.2f})."
    )


def _qkv_caption(s: str, steps, q: int, name: str, layer: int, cfg, obs) -> str:
    d, d_k = steps.x.shape[1], steps.q.shape[1]
    if s == "X":
        what = "the stream after the norm (pre-norm)" if cfg.norm == "pre" else "the stream itself (post-norm)"
        return (
            f"Layer {layer}'s attention reads X: {steps.x.shape[0]} tokens × {d} numbers, {what}; the row of {name} "
            f"has norm {np.linalg.norm(steps.x[q]):.2f}."
        )
    m = {"Q": steps.q, "K": steps.k, "V": steps.v}[s]
    role = {"Q": "query: what it looks for", "K": "key: what it offers to be found by", "V": "value: what it passes on"}
    shared = ""
    if s in ("K", "V") and cfg.group_size > 1:
        shared = f" This head shares K and V with {cfg.group_size - 1} other query heads (GQA)."
    return (
        f"{s} = X·W_{s.lower()}: W_{s.lower()} is {d} × {d_k} for this head, so every token gets a {d_k}-number "
        f"{role[s]}; {name}'s has norm {np.linalg.norm(m[q]):.2f}.{shared}"
    )


def _title(step: int, d_k: int, cfg) -> str:
    """A step's title; the scaling step with the model's own scale and cap where it has them, the mask's with the
    position term a model adds to its scores there (T5, MPNet, DeBERTa)."""
    if STEPS[step] == "mask" and (cfg.relative_bias or cfg.disentangled):
        return f"add the {position_name(cfg)}, then the mask"
    if STEPS[step] != "÷√d_k" or not (own_scale(cfg) or cfg.attn_softcap):
        return TITLES[step].format(d_k=d_k)
    text = f"multiply by the model's scale {own_scale(cfg):.3g}" if own_scale(cfg) else f"divide by √d_k = √{d_k}"
    return text + (f", cap at ±{cfg.attn_softcap:g}" if cfg.attn_softcap else "")


def _score_caption(s: str, steps, q: int, tokens: list[str], d_k: int, scale: bool, causal: bool, cfg=None) -> str:
    name = quoted_at(tokens, q)
    blocked = np.isneginf(steps.masked[q])
    if s == "q·k":
        row = steps.qk[q]
        hi, lo = int(np.argmax(row)), int(np.argmin(row))
        return (
            f"q·k: the query of {name} against all {len(row)} keys — highest {quoted_at(tokens, hi)} ({row[hi]:.2f}), "
            f"lowest {quoted_at(tokens, lo)} ({row[lo]:.2f})."
        )
    if s == "÷√d_k":
        row = steps.scaled[q]
        if not scale:
            return "Scaling is switched off in the sidebar: the scores go to the softmax unchanged."
        if cfg is not None and (own_scale(cfg) or cfg.attn_softcap):
            return f"{scaling_words(cfg, d_k)}: the scores now run from {row.min():.2f} to {row.max():.2f}."
        return (
            f"÷√{d_k} = ÷{math.sqrt(d_k):.2f}: the scores now run from {row.min():.2f} to {row.max():.2f}, on the "
            "same scale whatever the head's width."
        )
    if s == "mask":
        added = ""
        if steps.position is not None and cfg is not None and not blocked.all():
            term = steps.position[q][~blocked]
            added = f"The {position_name(cfg)} adds {term.min():.2f} to {term.max():.2f} to the scores of {name}. "
        if not blocked.any():
            every = f"every one of the {len(blocked)} keys"
            return added + f"No mask here: {name} may look at {every}, before and after it."
        ahead = int(blocked[q + 1 :].sum())
        why = f"{ahead} key{'s' if ahead != 1 else ''} after it (no looking ahead)" if causal and ahead else ""
        rest = int(blocked.sum()) - (ahead if why else 0)
        why = ", ".join(x for x in (why, f"{rest} outside its window" if rest else "") if x)
        return added + (
            f"The mask sets {int(blocked.sum())} scores of {name} to −∞: {why}; {int((~blocked).sum())} keys remain."
        )
    row = steps.pattern[q]
    order = weighed(row)  # the keys it sees, strongest first
    first = int(order[0]) if len(order) else int(np.argmax(row))
    second = f", {quoted_at(tokens, order[1])} {row[order[1]]:.3f}" if len(order) > 1 else " (the only key it sees)"
    return (
        f"softmax: e^s / Σ e^s over the visible keys — {quoted_at(tokens, first)} gets {row[first]:.3f} of the weight"
        f"{second}; masked keys get exactly 0 and the weights sum to {row.sum():.3f}"
        + ("." if steps.sink is None else f": the head's learned sink takes the other {steps.sink[q]:.3f}.")
    )
