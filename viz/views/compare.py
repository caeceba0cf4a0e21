"""Two attention maps side by side on one colour scale and their difference: two heads, one head on two texts,
one head in two models."""

from __future__ import annotations

from model.io.catalog import ModelSpec, random_like
from viz.figures import difference_heatmap, heatmap_panels
from viz.figures.common import Theme, with_subtitle
from viz.views.attention import _check, subtitle
from viz.views.base import Source, view


def _compare(src: Source, theme: Theme, obs_b, layer_a, head_a, layer_b, head_b, titles):
    """A and B side by side on one colour scale and, when their tokens match, A − B."""
    obs, hide = src.obs, src.hide_special
    layer_b, head_b = min(layer_b, obs_b.n_layers - 1), min(head_b, obs_b.n_heads - 1)
    pattern_a, tokens_a = obs.shown(obs.patterns[layer_a, head_a], hide), obs.shown_tokens(hide)
    pattern_b, tokens_b = obs_b.shown(obs_b.patterns[layer_b, head_b], hide), obs_b.shown_tokens(hide)
    title_a, title_b = titles(layer_b, head_b)
    zmax = float(max(pattern_a.max(initial=0), pattern_b.max(initial=0)))
    pair = heatmap_panels(
        [(pattern_a, tokens_a, tokens_a, title_a), (pattern_b, tokens_b, tokens_b, title_b)],
        title="A and B on one colour scale",
        theme=theme,
        zmax=zmax,
    )
    b_text = "" if obs_b is obs else f" · B: “{' '.join(obs_b.text.split())[:50]}”"
    figures = {"AB": with_subtitle(pair, subtitle(src) + b_text, theme)}
    if pattern_a.shape == pattern_b.shape and tokens_a == tokens_b:
        figures["diff"] = with_subtitle(
            difference_heatmap(
                pattern_a, pattern_b, tokens_a, title="A − B (red: A attends more, blue: B attends more)", theme=theme
            ),
            f"{title_a}  vs  {title_b}",
            theme,
        )
    return figures


@view("compare.heads", page="compare")
def compare_heads(src: Source, theme: Theme, *, layer_a: int = 0, head_a: int = 0, layer_b: int = 0, head_b: int = 1):
    """Two heads on this text: A, B and A − B."""
    _check(src, layer_a, head_a)
    return _compare(
        src,
        theme,
        src.obs,
        layer_a,
        head_a,
        layer_b,
        head_b,
        lambda lb, hb: (f"A: layer {layer_a}, head {head_a}", f"B: layer {lb}, head {hb}"),
    )


@view("compare.texts", page="compare")
def compare_texts(src: Source, theme: Theme, *, layer: int = 0, head: int = 0, text_b: str = "The dog sat on the log."):
    """One head on this text (A) and on another (B)."""
    _check(src, layer, head)
    obs_b = src.other(text=text_b)[0]
    return _compare(
        src,
        theme,
        obs_b,
        layer,
        head,
        layer,
        head,
        lambda lb, hb: (f"A: layer {layer}, head {head} on text A", f"B: layer {lb}, head {hb} on text B"),
    )


@view("compare.models", page="compare")
def compare_models(
    src: Source,
    theme: Theme,
    *,
    layer_a: int = 0,
    head_a: int = 0,
    model_b: str = "random",
    seed_b: int = 1,
    layer_b: int = 0,
    head_b: int = 0,
):
    """This text through this model (A) and another (B: a random init of the same size, or a catalog model);
    B's layer and head are clamped to B's size."""
    _check(src, layer_a, head_a)
    spec = random_like(src.loaded.model.cfg, seed_b) if model_b == "random" else ModelSpec(model_b)
    obs_b, loaded_b = src.other(spec=spec)
    name_a, name_b = src.loaded.name, loaded_b.name
    return _compare(
        src,
        theme,
        obs_b,
        layer_a,
        head_a,
        layer_b,
        head_b,
        lambda lb, hb: (f"A: {name_a} L{layer_a}H{head_a}", f"B: {name_b} L{lb}H{hb}"),
    )
