"""Views of a corpus profile (model/profile): every head on two metrics, one metric's spread per head, and one
head's top documents with its pattern on each. The profile is named by its folder; captions come from its numbers.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from model.profile.job import COLUMNS, head_means, top_documents
from model.profile.store import Profile
from viz.figures import heatmap_panels
from viz.figures.common import Theme, with_subtitle
from viz.figures.corpus import head_scatter, metric_boxes
from viz.views.base import Captioned, Source, ViewUnavailableError, view
from viz.views.captions import quoted, rank_correlation

LABELS = {
    "entropy": "entropy (nats)",
    "mean_distance": "mean distance (tokens)",
    "self": "weight on itself",
    "previous": "weight on the previous token",
    "next": "weight on the next token",
    "special": "weight on special tokens",
    "max_weight": "largest weight",
    "share_cls": "share on [CLS]",
    "share_sep": "share on [SEP]",
    "share_punct": "share on punctuation",
    "share_pos0": "share on position 0",
}
EXAMPLES = 4


def label(metric: str) -> str:
    return LABELS.get(metric, metric)


def _profile(src: Source, path: str, *metrics: str) -> Profile:
    for metric in metrics:
        if metric not in COLUMNS:
            raise ViewUnavailableError(f"unknown metric {metric!r}; choose from {', '.join(COLUMNS)}")
    profile = src.profile(path) if path else None
    if profile is None:
        raise ViewUnavailableError("No corpus profile yet: run a corpus on the Corpus profiles page first.")
    if profile.meta.get("model") != src.loaded.name:
        raise ViewUnavailableError(
            f"This profile was made with {profile.meta.get('model')}; the model now loaded is {src.loaded.name}."
        )
    return profile


def _about(profile: Profile) -> str:
    meta = profile.meta
    corpus = meta.get("corpus") or "a corpus"
    return f"{meta['model']} · {meta['documents']} documents of {corpus} (≤ {meta['max_len']} tokens)"


@view("corpus.scatter", page="corpus")
def corpus_scatter(src: Source, theme: Theme, *, profile: str = "", x: str = "previous", y: str = "share_cls"):
    """Every head as a dot at its corpus means of two metrics; a click picks the head."""
    p = _profile(src, profile, x, y)
    means = head_means(p.heads)
    fig = head_scatter(
        means[x], means[y], means["layer"], means["head"], x_name=label(x), y_name=label(y), theme=theme,
        title=f"Every head, mean over the documents: {label(x)} vs {label(y)}",
    )  # fmt: skip
    bx, by = means.loc[means[x].idxmax()], means.loc[means[y].idxmax()]
    name_x, name_y = f"L{int(bx['layer'])}H{int(bx['head'])}", f"L{int(by['layer'])}H{int(by['head'])}"
    caption = (
        f"Each dot is one of {len(means)} heads, averaged over {p.meta['documents']} documents. Highest {label(x)}: "
        f"{name_x} ({bx[x]:.2f}); highest {label(y)}: {name_y} ({by[y]:.2f}); rank correlation between the two "
        f"over heads ρ = {rank_correlation(means[x], means[y]):.2f}."
    )
    return Captioned(with_subtitle(fig, _about(p), theme), caption)


@view("corpus.spread", page="corpus")
def corpus_spread(src: Source, theme: Theme, *, profile: str = "", metric: str = "entropy"):
    """One metric's distribution over the documents, per head (box: quartiles; whiskers: min and max)."""
    p = _profile(src, profile, metric)
    groups = p.heads.groupby(["layer", "head"], sort=True)[metric]
    stats = groups.quantile([0.0, 0.25, 0.5, 0.75, 1.0]).unstack()  # (K, 5)
    names = [f"L{a}H{b}" for a, b in stats.index]
    fig = metric_boxes(stats.to_numpy(), names, metric=label(metric), theme=theme, title=f"{label(metric)} per head")
    iqr = stats[0.75] - stats[0.25]
    wide, steady = int(np.argmax(iqr.to_numpy())), int(np.argmin(iqr.to_numpy()))
    caption = (
        f"Across {p.meta['documents']} documents, {names[wide]} varies most (middle half from "
        f"{stats.iloc[wide][0.25]:.2f} to {stats.iloc[wide][0.75]:.2f}) and {names[steady]} least (from "
        f"{stats.iloc[steady][0.25]:.2f} to {stats.iloc[steady][0.75]:.2f}): one sentence rarely shows a head's "
        "typical behaviour."
    )
    return Captioned(with_subtitle(fig, _about(p), theme), caption)


@view("corpus.examples", page="corpus")
def corpus_examples(
    src: Source, theme: Theme, *, profile: str = "", layer: int = 0, head: int = 0, metric: str = "previous"
):
    """One head's top documents for a metric, with its pattern on each."""
    p = _profile(src, profile, metric)
    if not (0 <= layer < p.meta["layers"] and 0 <= head < p.meta["heads"]):
        raise ViewUnavailableError(f"the profile has {p.meta['layers']} layers × {p.meta['heads']} heads")
    top = top_documents(p.heads, layer, head, metric, k=EXAMPLES)
    texts = p.docs.set_index("doc")["text"]
    names = p.docs.set_index("doc")["id"] if "id" in p.docs else None  # profiles before ids: none
    options = replace(src.options, max_len=int(p.meta["max_len"]), kinds=("pattern",))
    panels = []
    for doc, value in zip(top["doc"], top[metric], strict=True):
        obs, _ = src.other(text=str(texts[doc]), options=options)
        name = str(names[doc]) if names is not None and names[doc] else f"document {doc}"
        panels.append((obs.patterns[layer, head], obs.tokens, obs.tokens, f"{name}: {value:.2f}"))
    title = f"L{layer}H{head}: the documents with the highest {label(metric)}"
    fig = heatmap_panels(panels, title=title, theme=theme, columns=2)  # 2 × 2 near-square maps, not four strips
    mean = float(p.heads[(p.heads["layer"] == layer) & (p.heads["head"] == head)][metric].mean())
    first = str(texts[int(top["doc"].iloc[0])])
    first = first[:60] + ("…" if len(first) > 60 else "")
    caption = (
        f"L{layer}H{head}'s {label(metric)} on these {len(panels)} documents: "
        + ", ".join(f"{v:.2f}" for v in top[metric])
        + f"; its mean over the corpus is {mean:.2f}. The first begins {quoted(first)}."
    )
    return Captioned(with_subtitle(fig, _about(p), theme), caption)
