"""Views of what heads do: the gallery of specialised heads (the strongest heads of each kind as thumbnails)
and the lesson "heads specialise" (kinds counted on the trained model beside a random init of its config)."""

from __future__ import annotations

import numpy as np

from model.analysis.kinds import KINDS, SPECIALISED, THRESHOLDS, HeadKinds
from model.io.catalog import ModelSpec
from viz.figures.common import Theme, with_subtitle
from viz.figures.gallery import head_gallery, kind_counts
from viz.views.attention import subtitle
from viz.views.base import Captioned, Source, ViewUnavailableError, view

PER_KIND = 5  # thumbnails per kind


def summary(kinds: HeadKinds, total: int, name: str) -> str:
    """“5 of 24 heads of X have a job on this text: 2 previous token (strongest L1H2, 0.81), …; 2 broad, 17 mixed.”"""
    counts = kinds.counts()
    jobs = []
    for kind in SPECIALISED:
        if counts[kind]:
            layer, head = kinds.heads(kind)[0]
            score = float(kinds.scores[kind][layer, head])
            jobs.append(f"{counts[kind]} {kind} (strongest L{layer}H{head}, {score:.2f})")
    rest = f"{counts['broad']} broad (nearly uniform), {counts['mixed']} mixed (no single job)"
    if not jobs:
        return f"No head of {name} passes a kind's threshold on this text: {rest}."
    return f"{kinds.specialised} of {total} heads of {name} have a job on this text: {', '.join(jobs)}; {rest}."


@view("heads.gallery", page="metrics")
def gallery(src: Source, theme: Theme):
    """Per kind, its strongest heads (thumbnails on their own colour scale; a click opens the head)."""
    obs = src.obs
    kinds = src.kinds()
    counts = kinds.counts()
    rows = []
    for kind in KINDS:
        heads = kinds.heads(kind)[:PER_KIND]
        if not heads:
            continue
        layers, hs = np.array(heads).T
        rows.append(
            {
                "kind": f"{kind} ({counts[kind]})",
                "patterns": obs.patterns[layers, hs],
                "labels": [f"L{la}H{h} · {kinds.scores[kind][la, h]:.2f}" for la, h in heads],
                "heads": heads,
                "hover": [f"L{la}H{h}: {kinds.sentence(kind, la, h)}" for la, h in heads],
            }
        )
    if not rows:
        raise ViewUnavailableError("No head has a kind on this text (every head is mixed); try a longer text.")
    total = obs.n_layers * obs.n_heads
    fig = head_gallery(rows, title=f"What the heads of {src.loaded.name} do on this text", theme=theme)
    bar = f"a kind needs a score ≥ {THRESHOLDS['self']:.1f} (broad: ≥ {THRESHOLDS['broad']:.0%} of the largest entropy)"
    return Captioned(with_subtitle(fig, f"{bar} · " + subtitle(src), theme), summary(kinds, total, src.loaded.name))


@view("lesson.kinds", page="lessons")
def lesson_kinds(src: Source, theme: Theme):
    """Heads of each kind: the trained model beside a random init of the same config, on this text."""
    trained = src.kinds()
    random = src.kinds(ModelSpec("reinit", base=src.spec, seed=0))
    total = src.obs.n_layers * src.obs.n_heads
    name = src.loaded.name
    counts = {name: trained.counts(), "random init, same config": random.counts()}
    shown = [k for k in (*KINDS, "mixed") if any(c[k] for c in counts.values())]
    fig = kind_counts(counts, shown, title="Heads specialise: kinds of head, trained vs random init", theme=theme)
    caption = summary(trained, total, name) + " " + summary(random, total, "a random init of the same config")
    return Captioned(with_subtitle(fig, subtitle(src), theme), caption)
