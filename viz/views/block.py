"""Views of the block: the model's own diagram (from its config), its residual stream's size through the
blocks, the lesson "pre-norm or post-norm" (the bundled model beside MiniLM on the same text), and a mixture of
experts' routing."""

from __future__ import annotations

from dataclasses import asdict

import numpy as np

from model.analysis.experts import routing
from model.analysis.stream import Stream
from model.anatomy import anatomy
from model.io.catalog import ModelSpec, available
from viz.figures.block import block_diagram, growth_chart, stream_chart
from viz.figures.common import Theme, with_subtitle
from viz.figures.experts import expert_load, expert_matrix, routed_text
from viz.figures.text import pct
from viz.views.attention import subtitle
from viz.views.base import Captioned, Source, ViewUnavailableError, view
from viz.views.captions import quoted_at


@view("block.diagram", page="block")
def diagram(src: Source, theme: Theme):
    """The model's block drawn from its config; a click on a part reports [key, page]."""
    cfg = src.loaded.model.cfg
    a = anatomy(cfg)
    fig = block_diagram(
        [asdict(p) for p in a.parts],
        list(a.edges),
        block_rows=a.block_rows,
        n_layers=a.n_layers,
        title=f"{src.loaded.name}: one block of {cfg.n_layers}, drawn from its config",
        theme=theme,
    )
    width = f"d_model {cfg.d_model}, {cfg.n_heads} heads, d_ff {cfg.d_ff}"
    return Captioned(with_subtitle(fig, width, theme), a.summary)


def _token(stream: Stream, token: int) -> tuple[np.ndarray, np.ndarray, str]:
    """(norm (S,), ratio (2L,), what they are of): one token's, or the mean over tokens (token −1)."""
    n = stream.norm.shape[1]
    if 0 <= token < n:
        return stream.norm[:, token], stream.ratio[:, token], f"token {token}"
    return stream.norm.mean(1), stream.ratio.mean(1), f"mean over {n} tokens"


def stream_caption(name: str, stream: Stream, norm: np.ndarray, ratio: np.ndarray, what: str) -> str:
    """What the stream chart shows, from its numbers: growth (pre-norm) or reset (post-norm), and which sublayer
    changes the stream most."""
    first, last = float(norm[0]), float(norm[-1])
    labels = stream.labels[1:]
    big = int(np.argmax(ratio))
    per = np.asarray(ratio).reshape(-1, len(stream.parts))  # (L, P): each block's sublayers
    attn, ff = per[:, 0], per[:, -1]
    cross = f", cross-attention {per[:, 1].mean():.2f}" if "cross-attention" in stream.parts else ""
    layers = len(attn)
    if stream.post_norm:
        lo, hi = float(norm[1:].min()), float(norm[1:].max())
        size = (
            f"{name} (post-norm, {what}): every sublayer ends in a norm on the stream, so after the embedding "
            f"({first:.3g}) its norm stays between {lo:.3g} and {hi:.3g} through {layers} layers."
        )
    else:
        size = (
            f"{name} (pre-norm, {what}): nothing rescales the stream between blocks, so its norm goes from "
            f"{first:.3g} after the embedding to {last:.3g} after the last sublayer (×{last / max(first, 1e-12):.2f})."
        )
    return (
        f"{size} Attention adds on average {attn.mean():.2f} of the stream's norm{cross}, the feed-forward "
        f"{ff.mean():.2f}; the largest change is {labels[big]} ({ratio[big]:.2f})."
    )


@view("block.stream", page="block")
def stream(src: Source, theme: Theme, *, token: int = -1):
    """‖stream‖ after every sublayer and ‖what each sublayer adds‖ / ‖stream‖, for one token or averaged."""
    s, obs = src.stream()
    norm, ratio, what = _token(s, token)
    who = what if token < 0 or token >= obs.n_tokens else f"{what} {quoted_at(obs.tokens, token)}"
    column = {"name": src.loaded.name, "labels": s.labels, "norm": norm, "ratio": ratio, "parts": s.parts}
    fig = stream_chart([column], title=f"The residual stream through {s.n_layers} blocks ({who})", theme=theme)
    return Captioned(with_subtitle(fig, subtitle(src), theme), stream_caption(src.loaded.name, s, norm, ratio, who))


PRE, POST = ModelSpec("bundled"), ModelSpec("minilm")


@view("lesson.norms", page="lessons")
def lesson_norms(src: Source, theme: Theme):
    """The bundled model (pre-norm) beside MiniLM (post-norm) on this text: the stream grows, or is reset."""
    for spec in (PRE, POST):
        ok, why = available(spec.kind)
        if not ok:
            raise ViewUnavailableError(f"This lesson compares the bundled model with MiniLM; {spec.kind} is {why}.")
    series, captions = [], []
    for spec in (PRE, POST):
        s, _ = src.stream(spec)
        name, short = ("The bundled model", "bundled (pre-norm)") if spec == PRE else ("MiniLM", "MiniLM (post-norm)")
        norm, ratio, what = _token(s, -1)
        series.append({"name": short, "labels": s.labels, "norm": norm})
        captions.append(stream_caption(name, s, norm, ratio, what))
    title = "Pre-norm or post-norm: where the norm sits decides the stream's size"
    fig = growth_chart(series, title=title, theme=theme)
    pre, post = (np.asarray(x["norm"]) / x["norm"][0] for x in series)  # as drawn: relative to the embedding
    captions.insert(
        0,
        f"Drawn relative to the embedding: the bundled model's stream ends at ×{pre[-1]:.2f}; MiniLM's stays between "
        f"×{post.min():.2f} and ×{post.max():.2f} and ends at ×{post[-1]:.2f}.",
    )
    return Captioned(with_subtitle(fig, subtitle(src, name="bundled and MiniLM"), theme), " ".join(captions))


@view("experts", page="block")
def experts(src: Source, theme: Theme, *, layer: int = -1):
    """A mixture-of-experts layer's routing (``layer``: a layer with experts; −1: the first): the text coloured by
    each token's first choice, the token × expert router weights, and each expert's share of the choices."""
    obs, cfg = src.obs, src.loaded.model.cfg
    if obs.experts is None or not obs.expert_layers:
        raise ViewUnavailableError(f"{src.loaded.name} has no mixture of experts: every feed-forward is dense")
    layer = obs.expert_layers[0] if layer < 0 else layer
    if layer not in obs.expert_layers:
        dense = f"layer {layer} has a dense feed-forward" if 0 <= layer < cfg.n_layers else f"no layer {layer}"
        raise ViewUnavailableError(f"{dense}; the experts are in layer {', '.join(map(str, obs.expert_layers))}")
    r = routing(obs.experts[obs.expert_layers.index(layer)])
    tokens = obs.tokens
    top = int(np.argmax(r.load))
    share = float(r.weights[np.arange(len(r.first)), r.first].mean())
    text = routed_text(
        tokens, r.first, r.weights[np.arange(len(r.first)), r.first], cfg.n_experts,
        title=f"Layer {layer}: each token in the colour of its first-choice expert", theme=theme,
    )  # fmt: skip
    firsts = np.bincount(r.first, minlength=cfg.n_experts)
    text_caption = (
        f"The router sends each token to {cfg.experts_per_token} of {cfg.n_experts} experts; coloured here by the "
        f"one it weighs most (on average {pct(share)} of the mix). Expert {int(np.argmax(firsts))} is the first "
        f"choice of {int(firsts.max())} of {len(tokens)} tokens."
    )
    matrix = expert_matrix(r.weights, tokens, title=f"Layer {layer}: router weight on each chosen expert", theme=theme)
    matrix_caption = (
        f"Each row holds {cfg.experts_per_token} nonzero weights, the experts the token was routed to"
        + (", summing to 1 (renormalised over the chosen)." if cfg.router_norm_topk else
           "; they keep their share of the softmax over all experts, so a row sums to less than 1.")
    )  # fmt: skip
    load = expert_load(r.load, title=f"Layer {layer}: how evenly the experts are used", theme=theme)
    unused = f" Unused here: expert {', '.join(map(str, r.unused))}." if r.unused else " Every expert is used."
    load_caption = (
        f"Expert {top} takes the most choices ({pct(r.load[top])}; even would be {pct(1 / cfg.n_experts)}); the "
        f"load's evenness is {r.evenness:.2f} (its entropy ÷ log {cfg.n_experts}: 1 is perfectly even).{unused}"
    )
    sub = subtitle(src)
    return {
        "text": Captioned(with_subtitle(text, sub, theme), text_caption),
        "matrix": Captioned(with_subtitle(matrix, sub, theme), matrix_caption),
        "load": Captioned(with_subtitle(load, sub, theme), load_caption),
    }
