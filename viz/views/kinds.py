"""Views of what heads do: the gallery of specialised heads (the strongest heads of each kind as thumbnails)
and the lesson "heads specialise" (kinds counted on the trained model beside a random init of its config)."""

from __future__ import annotations

import numpy as np

from model.analysis.kinds import KINDS, NOT_COMPUTABLE, SPECIALISED, THRESHOLDS, HeadKinds
from model.io.catalog import ModelSpec
from viz.figures.common import Theme, with_subtitle
from viz.figures.gallery import THUMB, head_gallery, kind_counts
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
            what = f"linking {kinds.pair}" if kind == "your pair" else kind
            jobs.append(f"{counts[kind]} {what} (strongest L{layer}H{head}, {score:.2f})")
    rest = f"{counts['broad']} broad (nearly uniform), {counts['mixed']} mixed (no single job)"
    if counts[NOT_COMPUTABLE]:
        rest += f", {counts[NOT_COMPUTABLE]} not computable (NaN or Inf weights)"
    if not jobs:
        return f"No head of {name} passes a kind's threshold on this text: {rest}."
    return f"{kinds.specialised} of {total} heads of {name} have a job on this text: {', '.join(jobs)}; {rest}."


def focus_pair(src: Source, query: int, key: int) -> tuple[int, int] | None:
    """The focus query → key as a pair to look for (a pronoun and its antecedent), or None."""
    n = src.long.n_tokens if src.long is not None else src.obs.n_tokens
    return (query, key) if 0 <= query < n and 0 <= key < n and query != key else None


@view("heads.gallery", page="metrics")
def gallery(src: Source, theme: Theme, *, query: int = -1, key: int = -1):
    """Per kind, its strongest heads (thumbnails on their own colour scale; a click opens the head); with a focus
    query and key, the heads that link them ("your pair") too."""
    obs = src.obs
    kinds = src.kinds(pair=focus_pair(src, query, key))
    counts = kinds.counts()
    rows = []
    # a text read whole: each head's block means pooled from its summary (no N × N pattern exists)
    patterns = src.long.pooled(THUMB)[0] if src.long is not None else obs.patterns
    for kind in KINDS:
        heads = kinds.heads(kind)[:PER_KIND]
        if not heads:
            continue
        layers, hs = np.array(heads).T
        rows.append(
            {
                "kind": f"{kinds.pair if kind == 'your pair' else kind} ({counts[kind]})",
                "patterns": patterns[layers, hs],
                "labels": [f"L{la}H{h} · {kinds.scores[kind][la, h]:.2f}" for la, h in heads],
                "heads": heads,
                "hover": [f"L{la}H{h}: {kinds.sentence(kind, la, h)}" for la, h in heads],
            }
        )
    if not rows:
        raise ViewUnavailableError("No head has a kind on this text (every head is mixed); try a longer text.")
    total = obs.n_layers * obs.n_heads
    whole = f", all {src.long.n_tokens:,} tokens" if src.long is not None else ""
    fig = head_gallery(rows, title=f"What the heads of {src.loaded.name} do on this text{whole}", theme=theme)
    bar = f"a kind needs a score ≥ {THRESHOLDS['self']:.1f} (broad: ≥ {THRESHOLDS['broad']:.0%} of the largest entropy"
    bar += f"; your pair: ≥ {THRESHOLDS['your pair']:.1f}, 3 × chance, no column pattern)" if kinds.pair else ")"
    return Captioned(with_subtitle(fig, f"{bar} · " + subtitle(src), theme), summary(kinds, total, src.loaded.name))


@view("lesson.kinds", page="lessons")
def lesson_kinds(src: Source, theme: Theme, *, query: int = -1, key: int = -1):
    """Heads of each kind: the trained model beside a random init of the same config, on this text (with a focus
    pair: the heads that link its two tokens too)."""
    pair = focus_pair(src, query, key)
    trained = src.kinds(pair=pair)
    random = src.kinds(ModelSpec("reinit", base=src.spec, seed=0), pair)
    total = src.obs.n_layers * src.obs.n_heads
    name = src.loaded.name
    counts = {name: trained.counts(), "random init, same config": random.counts()}
    shown = [k for k in (*KINDS, "mixed", NOT_COMPUTABLE) if any(c[k] for c in counts.values())]
    fig = kind_counts(counts, shown, title="Heads specialise: kinds of head, trained vs random init", theme=theme)
    caption = summary(trained, total, name) + " " + summary(random, total, "a random init of the same config")
    return Captioned(with_subtitle(fig, subtitle(src), theme), caption)
