"""Views of the block: the model's own diagram (from its config), its residual stream's size through the
blocks, and the lesson "pre-norm or post-norm" (the bundled model beside MiniLM on the same text)."""

from __future__ import annotations

from dataclasses import asdict

import numpy as np

from model.analysis.stream import Stream
from model.anatomy import anatomy
from model.io.catalog import ModelSpec, available
from viz.figures.block import block_diagram, growth_chart, stream_chart
from viz.figures.common import Theme, with_subtitle
from viz.views.attention import subtitle
from viz.views.base import Captioned, Source, ViewUnavailableError, view
from viz.views.captions import quoted


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
    attn, ff = ratio[0::2], ratio[1::2]
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
        f"{size} Attention adds on average {attn.mean():.2f} of the stream's norm, the feed-forward "
        f"{ff.mean():.2f}; the largest change is {labels[big]} ({ratio[big]:.2f})."
    )


@view("block.stream", page="block")
def stream(src: Source, theme: Theme, *, token: int = -1):
    """‖stream‖ after every sublayer and ‖what each sublayer adds‖ / ‖stream‖, for one token or averaged."""
    s, obs = src.stream()
    norm, ratio, what = _token(s, token)
    who = what if token < 0 or token >= obs.n_tokens else f"{what} {quoted(obs.tokens[token])}"
    column = {"name": src.loaded.name, "labels": s.labels, "norm": norm, "ratio": ratio}
    fig = stream_chart([column], title=f"The residual stream through {len(s.labels) // 2} blocks ({who})", theme=theme)
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
