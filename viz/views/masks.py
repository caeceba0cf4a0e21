"""Views of the Masks page: the causal mask switched (what it removes, for a decoder) and a padded batch."""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from model.analysis.norms import relative_change
from viz.figures import change_bars, heatmap_panels
from viz.figures.common import Theme, with_subtitle
from viz.figures.text import pct
from viz.views.attention import subtitle
from viz.views.base import Captioned, Source, view
from viz.views.captions import mask_change, quoted
from viz.views.captions import padding as padding_caption
from viz.views.windows import window_caption


def causal_pair(src: Source):
    """(observation as built, observation with the causal mask toggled, label of each)."""
    built = src.loaded.model.cfg.causal
    scale = src.options.scale
    as_built, _ = src.other(options=replace(src.options, causal=None, scale=scale))
    toggled, _ = src.other(options=replace(src.options, causal=not built, scale=scale))
    labels = (
        "causal (as built)" if built else "bidirectional (as built)",
        "bidirectional (mask lifted)" if built else "causal mask switched on",
    )
    return as_built, toggled, labels


@view("masks.causal", page="masks")
def masks_causal(src: Source, theme: Theme, *, layer: int = 0, head: int = 0):
    """The head as built and with the causal mask toggled, side by side. For a decoder (causal as built) the
    caption says what the mask removes: the weight the head gives to later tokens once it may see them."""
    as_built, toggled, labels = causal_pair(src)
    built = src.loaded.model.cfg.causal

    def grey(obs):  # blocked cells grey (−∞ in the panels), not the colour of a weight near 0
        return np.where(obs.blocked(layer), -np.inf, obs.patterns[layer, head])

    fig = heatmap_panels(
        [
            (grey(as_built), as_built.tokens, as_built.tokens, labels[0]),
            (grey(toggled), toggled.tokens, toggled.tokens, labels[1]),
        ],
        title=f"What the causal mask {'removes' if built else 'changes'}: layer {layer}, head {head}",
        theme=theme,
        shared_rows=True,
    )
    open_pattern = (toggled if built else as_built).patterns[layer, head]  # the head when it may look ahead
    future = np.triu(open_pattern, 1).sum(-1)  # (N,) weight on later tokens, per query
    n = len(future)
    if n < 2:
        return with_subtitle(fig, subtitle(src), theme)
    worst = int(future[:-1].argmax())
    caption = (
        f"Allowed to look ahead, this head would put {pct(future[:-1].mean())} of its weight on later tokens on "
        f"average (most for token {worst} {quoted(as_built.tokens[worst])}: "
        f"{pct(future[worst])}); the mask removes exactly that and renormalises each row over the tokens before it. "
        + (
            "The model was trained with the mask, so without it it reads text it never learned to read."
            if built
            else "This model was trained without the mask."
        )
    )
    cfg = src.loaded.model.cfg
    if cfg.is_sliding(layer):  # the window is a mask too: drawn as built, and said
        caption += " " + window_caption(layer, cfg.sliding_window, as_built.patterns[layer, head], as_built.causal)
    return Captioned(with_subtitle(fig, "grey: blocked by the mask · " + subtitle(src), theme), caption)


@view("masks.change", page="masks")
def masks_change(src: Source, theme: Theme):
    as_built, toggled, labels = causal_pair(src)
    change = relative_change(as_built.hidden, toggled.hidden)
    fig = change_bars(as_built.tokens, change, title="How much each token's output changes", theme=theme)
    switched_on = not src.loaded.model.cfg.causal
    caption = mask_change(as_built.tokens, change, switched_on=switched_on, n_layers=as_built.n_layers)
    return Captioned(with_subtitle(fig, f"{labels[1]} · " + subtitle(src), theme), caption)


@view("masks.padding", page="masks")
def masks_padding(src: Source, theme: Theme, *, layer: int = 0, head: int = 0, text_b: str = "A short one."):
    res = src.padded(text_b, layer)
    tok = src.loaded.tokenizer
    mask = res["attention_mask"].astype(bool)
    n = mask.shape[1]
    ids_b = tok.encode(text_b, max_len=src.loaded.model.cfg.max_seq_len).ids
    panels = []
    for row, ids in enumerate((src.obs.ids, ids_b)):
        labels = [tok.id_to_token(i) for i in ids] + ["[PAD]"] * (n - len(ids))
        shown = np.where(mask[row][None, :], res["patterns"][row, head], -np.inf)
        panels.append((shown, labels, labels, f"text {'AB'[row]} in the batch"))
    fig = heatmap_panels(
        panels, title=f"A padded batch: layer {layer}, head {head} (padded keys grey)", theme=theme, zmax=1.0
    )
    on_pads = float(np.where(~mask[:, None, None, :], res["patterns"], 0.0).max())  # every head, every query
    caption = padding_caption(on_pads, float(res["padding_effect"]), int((~mask).sum()))
    return Captioned(with_subtitle(fig, f"text B: “{text_b[:60]}”", theme), caption)
