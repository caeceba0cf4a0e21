"""The view registry: every view builds, names follow every selection, traces fit the offline bundle."""

from __future__ import annotations

import json

import numpy as np
import pytest

from model.io.catalog import ModelSpec
from tests.security.gguf_files import write_tiny_gguf
from viz.export.offline import TRACE_TYPES
from viz.figures import Theme
from viz.figures.grids import GUTTER
from viz.views import REGISTRY, ViewUnavailableError, build
from viz.views.base import MAX_NAME, export_name
from viz.views.source import DirectSource

#: another value for each selection keyword (a view's figure may or may not change with it)
ALTERNATIVES = {
    "layer": 1,
    "head": 2,
    "mode": "scores",
    "heads": (0, 1),
    "threshold": 0.2,
    "start": 1,
    "focus": 3,
    "layer_a": 1,
    "head_a": 3,
    "layer_b": 1,
    "head_b": 2,
    "text_b": "A completely different sentence here.",
    "model_b": "bundled",
    "seed_b": 2,
    "query": 3,
    "key": 2,
    "n_positions": 64,
    "dims": (2, 3, 40),
    "positions_on": True,
    "seed": 1,
    "metric": "entropy",
    "ablate": ((1, 1),),
    "pick": 3,
    "relation": "next",
    "queries": (3,),
    "keys": (1,),
    "top": 4,
    "guess": 2,
    "without_sink": True,
    "span": (0, 4, 0, 6),
    "lengths": (300,),
    "depths": (50,),
    "cells": "max",
    "across": True,
    "target": "state",
    "sink": "[SEP]",
    "position": 1,
    "temperature": 0.5,
    "n_new": 5,
    "period": 12,
    "kv": 1,
    "token": 2,
    "step": 5,
    "x": "entropy",
    "y": "next",
    "profile": "",  # no profile: unavailable, so nothing to compare
    "window": 8,
    "answer": " the",
    "foil": "n",
    "corrupted": "the there then then the",
    "kinds": ("z",),
    "score": "probability",
    "receivers": "queries",
    "receiver_heads": "L1H0",
    "side": "Q",
    "embedding": "direct",
}
#: views whose defaults cannot draw anything: the selection they need first (patching needs a corrupted prompt of
#: the decoder's text's length, 10 tokens)
REQUIRED = {
    "causes.patching": {"corrupted": "there then the then the"},
    "causes.attribution_patching": {"corrupted": "there then the then the"},
    "causes.paths": {"corrupted": "there then the then the"},
    "lesson.needle": {"lengths": (256,), "depths": (0, 100)},  # two short haystacks: the view, not the test
}


PROFILES: dict[str, str] = {}  # the corpus views read a stored profile: made once, below


@pytest.fixture(scope="module")
def src(tmp_path_factory):
    from model.profile.corpus import bundled_documents
    from model.profile.run import run_profile

    docs = bundled_documents()[::100][:8]
    profile = run_profile(ModelSpec("bundled"), docs, tmp_path_factory.mktemp("profiles"), max_len=32)
    PROFILES["bundled"] = str(profile.path)
    return DirectSource.for_text(ModelSpec("bundled"), "The cat sat on the mat because it was tired.")


@pytest.fixture(scope="module")
def decoder_src(tmp_path_factory):
    """A tiny LLaMA-style decoder (GQA, RoPE, next-token head) from a GGUF file: the decoder-only views."""
    path = write_tiny_gguf(tmp_path_factory.mktemp("gguf") / "tiny.gguf", context=1024)  # a needle's haystack fits
    return DirectSource.for_text(ModelSpec("folder", path=str(path)), "the then the then there")


@pytest.fixture(scope="module")
def seq2seq_src():
    """The decoder of a tiny encoder–decoder trained on dates, reading a source: the cross-attention views."""
    from tests.viz.seq2seq import decoder_source

    return decoder_source()


@pytest.fixture(scope="module")
def moe_src():
    """gpt-oss in miniature (experts, learned sinks, alternating sliding layers): the mixture-of-experts views."""
    from tests.hf_fixtures import FIXTURES

    return DirectSource.for_text(ModelSpec("folder", path=str(FIXTURES / "gpt_oss")), "the then the then there")


@pytest.fixture(scope="module")
def relative_srcs():
    """DeBERTa-v3 and MPNet in miniature: the views of position inside the scores (the split, the relative bias)."""
    from tests.hf_fixtures import FIXTURES

    text = "the cat sat on the mat because it was tired"
    return [DirectSource.for_text(ModelSpec("folder", path=str(FIXTURES / f)), text) for f in ("deberta-v2", "mpnet")]


def built(view_key, src, **selection):
    selection = {**REQUIRED.get(view_key, {}), **selection}
    if view_key.startswith("corpus.") and "profile" not in selection and src.spec.kind in PROFILES:
        selection["profile"] = PROFILES[src.spec.kind]
    try:
        return build(view_key, src, Theme(), **selection)
    except ViewUnavailableError:
        return []


def spec_of(view) -> str:
    return json.dumps(view.figure.to_plotly_json(), sort_keys=True, default=str)


def test_every_view_builds_with_its_defaults_and_names_are_unique(
    src, decoder_src, seq2seq_src, moe_src, relative_srcs, monkeypatch
):
    """Each view builds on the bundled encoder or, when it is for decoders only, on a tiny decoder (cross-attention:
    an encoder–decoder's; experts: a mixture of experts; position inside the scores: DeBERTa, MPNet). The app
    stores layout edits without plotly's validators (viz/figures/layout.py), the tests validate them at every
    edit: each view makes the same JSON both ways."""
    from viz.figures import layout

    names = []
    for key in REGISTRY:
        drawn_on, views = next(
            ((s, v) for s in (src, decoder_src, seq2seq_src, moe_src, *relative_srcs) if (v := built(key, s))),
            (None, []),
        )
        assert views, key
        monkeypatch.setattr(layout, "STRICT", False)
        assert [spec_of(v) for v in built(key, drawn_on)] == [spec_of(v) for v in views], key
        monkeypatch.setattr(layout, "STRICT", True)
        for v in views:
            assert v.title and v.name and len(v.name) <= MAX_NAME, key
            assert {t.type for t in v.figure.data} <= TRACE_TYPES, key  # offline HTML can draw it
            names.append(v.name)
    assert len(names) == len(set(names))


@pytest.mark.slow
def test_every_slide_is_the_same_with_the_apps_unvalidated_layout_edits(
    src, decoder_src, seq2seq_src, moe_src, relative_srcs, monkeypatch
):
    """The app stores layout edits without plotly's validators (viz/figures/layout.py), the tests validate them
    at every edit: a slide makes the same JSON both ways (the screen's figures: the test above)."""
    from viz.figures import layout

    def slides(views) -> list[str]:
        return [json.dumps(v.slide().to_plotly_json(), sort_keys=True, default=str) for v in views]

    compared = 0
    for key in REGISTRY:
        for s in (src, decoder_src, seq2seq_src, moe_src, *relative_srcs):
            if strict := slides(built(key, s)):
                monkeypatch.setattr(layout, "STRICT", False)
                assert slides(built(key, s)) == strict, key
                monkeypatch.setattr(layout, "STRICT", True)
                compared += len(strict)
                break
    assert compared > 80


@pytest.mark.parametrize("key", list(REGISTRY))
@pytest.mark.slow
def test_a_figure_that_changes_with_a_selection_changes_its_name(
    src, decoder_src, seq2seq_src, moe_src, relative_srcs, key
):
    defaults = REGISTRY[key].selection
    where = (src, decoder_src, seq2seq_src, *relative_srcs)
    src = next((s for s in where if built(key, s)), moe_src)  # each view where it draws
    base = {v.key: v for v in built(key, src)}
    for param in defaults:
        assert param in ALTERNATIVES, f"no alternative value for {param!r}: add one"
        other = {v.key: v for v in built(key, src, **{param: ALTERNATIVES[param]})}
        for part, view in other.items():
            if part in base and spec_of(view) != spec_of(base[part]):
                assert view.name != base[part].name, (key, param)


def test_names_carry_the_text_options_and_style(src):
    (view,) = build("mean", src, Theme(), layer=1)
    assert view.name.startswith("Attention-Lab-bundled-MLM-v2_mean_L1_the-cat-")
    other = DirectSource.for_text(ModelSpec("bundled"), "A different text.")
    assert build("mean", other, Theme(), layer=1)[0].name != view.name
    assert build("mean", src, Theme(dark=True), layer=1)[0].name.endswith("_dark")
    src.hide_special = True
    try:
        assert "no-special" in build("mean", src, Theme(), layer=1)[0].name
    finally:
        src.hide_special = False
    long = export_name(src, Theme(), "x", {"text_b": "y" * 500, "more": "z" * 500})
    cut = export_name(src, Theme(), "x", {"text_b": "y" * 500, "more": "z" * 499 + "q"})
    assert len(long) <= MAX_NAME and long != cut  # a cut name still tells two selections apart


def test_unknown_views_and_selections_are_refused(src):
    with pytest.raises(ValueError, match="unknown view"):
        build("nope", src, Theme())
    with pytest.raises(ValueError, match="takes no colour"):
        build("attention", src, Theme(), colour="red")
    with pytest.raises(ViewUnavailableError, match="no layer 7"):
        build("attention", src, Theme(), layer=7)


def test_subtitles_quote_the_text_escaped():
    hostile = DirectSource.for_text(ModelSpec("bundled"), "<a href='javascript:alert(1)'>x</a> then more words")
    (view,) = build("attention", hostile, Theme())
    subtitle = view.figure.layout.title.subtitle.text
    assert "<a" not in subtitle and "&lt;a href=" in subtitle and "Attention Lab bundled MLM" in subtitle


def _drawn(fig, gutters: bool = True) -> list:
    """What a figure draws, trace by trace: the type and the data arrays (not the layout). ``gutters=False``:
    without the empty rows that hold the every-head grid's labels (their number follows the figure's height)."""
    out = []
    for trace in fig.data:
        drawn = {"type": trace.type}
        for k in ("x", "y", "z", "customdata"):
            value = getattr(trace, k, None)
            if value is not None:
                arr = np.asarray(value)
                drawn[k] = np.where(np.isnan(arr), None, arr).tolist() if arr.dtype.kind == "f" else arr.tolist()
        out.append(drawn)
    for trace in out if not gutters else []:
        if trace["type"] == "heatmap" and isinstance(trace.get("y"), list):
            rows = [i for i, label in enumerate(trace["y"]) if not str(label).startswith(GUTTER)]
            trace["y"] = [trace["y"][i] for i in rows]
            trace["z"] = [trace["z"][i] for i in rows]
    return out


def _title(fig) -> str:
    return (fig.layout.title.text or "").replace("<br>", " ")


RELAID = {"perm"}  # views whose slide shows a subset of their panels (viz.figures.grids.heatmap_panels on_slide)


@pytest.mark.slow
def test_every_slide_draws_what_the_screen_draws_in_a_slide_box(src, decoder_src):
    """A slide is the same view rebuilt in the slide's box: the same traces, categories, values and focus
    outlines; only sizes and tick thinning may differ."""
    from viz.figures.theme import SLIDE_BOX

    checked = 0
    for key in REGISTRY:
        for view in built(key, src) or built(key, decoder_src):
            slide, exact = view.slide(), view.exact()
            assert _drawn(view.figure) == _drawn(exact), view.key  # a file at screen size: the screen's figure
            if key in RELAID:  # one idea per slide: some of the screen's panels, each drawn as on screen
                assert all(t in _drawn(exact, gutters=False) for t in _drawn(slide, gutters=False)), view.key
            else:
                assert _drawn(slide, gutters=False) == _drawn(exact, gutters=False), view.key
            assert (slide.layout.width, slide.layout.height) == SLIDE_BOX, view.key
            assert _title(slide) == _title(exact), view.key
            shapes = [(s.type, s.x0, s.x1, s.y0, s.y1) for s in exact.layout.shapes]
            assert [(s.type, s.x0, s.x1, s.y0, s.y1) for s in slide.layout.shapes] == shapes, view.key
            checked += 1
    assert checked > 50


def test_top_documents_are_named_by_the_corpus_files_own_ids(src, tmp_path):
    from model.profile.corpus import bundled_documents, parse_documents
    from model.profile.run import run_profile

    texts = bundled_documents()[::150][:4]
    lines = [json.dumps({"id": f"essay-{i}", "text": t}) for i, t in enumerate(texts)]
    docs, ids = parse_documents("\n".join(lines).encode(), "mine.jsonl")
    assert ids == ["essay-0", "essay-1", "essay-2", "essay-3"]
    profile = run_profile(ModelSpec("bundled"), docs, tmp_path, ids=ids, max_len=32)
    assert list(profile.docs["id"]) == ids
    (view,) = build("corpus.examples", src, Theme(), profile=str(profile.path), metric="previous")
    titles = [a.text for a in view.figure.layout.annotations if a.text.startswith("essay-")]
    heatmaps = [t for t in view.figure.data if t.type == "heatmap"]
    assert len(titles) == len(heatmaps) > 0, titles
    assert not [a.text for a in view.figure.layout.annotations if a.text.startswith("document ")]
