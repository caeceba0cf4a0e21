"""What leaves the app for a lecture: slide images at 1920 × 1080 with the caption band, the caption and the
provenance in the files' metadata, titles wrapped instead of cut, focus tokens always labelled, and the deck
(PowerPoint with notes, offline HTML slides) built from figures as they were on screen."""

from __future__ import annotations

import io
import itertools
import json
import math
import os
import xml.etree.ElementTree as ET

import numpy as np
import plotly.io as pio
import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from model.io.catalog import ModelSpec
from viz.export import render
from viz.export.band import png_text
from viz.export.deck import check_item, deck_html, deck_pptx, make_item, predict_question, slides
from viz.export.provenance import app_version, provenance
from viz.figures import Theme
from viz.figures.text import fit_title, keep_shown, thinned
from viz.figures.theme import SLIDE_BOX
from viz.session import dump_session, load_session
from viz.views import build
from viz.views.source import DirectSource

needs_chromium = pytest.mark.skipif(
    not render.image_export_available() and not os.environ.get("CI"), reason="no chromium here (CI installs it)"
)
TEXT = "The animal didn't cross the street because it was too tired."


@pytest.fixture(scope="module")
def src():
    return DirectSource.for_text(ModelSpec("bundled"), TEXT)


def test_thinning_keeps_the_focus_and_spaces_the_rest():
    labels = [f"t{i}" for i in range(40)]
    shown = thinned(labels, 10, keep=[17, 23])["tickvals"]
    assert {"t17", "t23"} <= set(shown) and len(shown) <= 10
    positions = sorted(labels.index(x) for x in shown)
    assert min(b - a for a, b in itertools.pairwise(positions)) >= 3  # nothing crowds the kept labels
    assert thinned(labels[:8], 10, keep=[3])["tickvals"] == labels[:8]  # what fits is all shown


@given(
    n=st.integers(2, 200),
    budget=st.integers(2, 60),
    keep=st.lists(st.integers(0, 199), max_size=4),
    named=st.lists(st.integers(0, 199), max_size=6),
)
@example(n=195, budget=2, keep=[97], named=[0, 1])  # one label shown: its two named neighbours overprinted each other
def test_thinned_labels_never_sit_closer_than_the_gap_the_budget_leaves(n, budget, keep, named):
    """Labels sit at their cells' centres: shown ones are at least ceil(n / budget) cells apart (the room each of
    ``budget`` labels has), kept ones included, and adding the labels a caption names keeps that spacing."""
    labels = [f"t{i}" for i in range(n)]
    shown = thinned(labels, budget, keep=keep)["tickvals"]
    assert len(shown) <= max(budget, 1) or len(shown) == n
    if n <= budget:
        assert shown == labels
        return
    gap = math.ceil(n / budget)
    first = sorted({k for k in keep if k < n})[:1]
    assert all(labels[k] in shown for k in first)  # the focus is always labelled
    for kept in (shown, keep_shown(shown, labels, {labels[i] for i in named if i < n})):
        where = sorted(labels.index(x) for x in kept)
        assert min((b - a for a, b in itertools.pairwise(where)), default=gap) >= gap, (kept, gap)


def test_long_titles_wrap_instead_of_being_cut():
    sizes = Theme(presentation=True).sizes
    title = "Each dimension is a sinusoid; its wavelength grows with the dimension, from 2π to 10000·2π"
    text, size = fit_title(title, 600, sizes)
    assert "…" not in text and "<br>" in text and text.replace("<br>", " ") == title
    assert size == sizes.axis_title  # smaller first, then wrapped
    text, size = fit_title(title, 1100, sizes, shrink=False)  # a slide: large, on two lines
    assert size == sizes.title and text.count("<br>") == 1 and text.replace("<br>", " ") == title
    assert fit_title("Short", 600, sizes) == ("Short", sizes.title)


def test_every_head_labels_sit_above_their_tiles_in_every_layout(src):
    for theme in (Theme(), Theme(presentation=True)):
        (view,) = build("heads", src, theme, layer=1)
        for fig in (view.figure, view.exact(), view.slide()):
            y = list(fig.data[0].y)
            z = np.asarray(fig.data[0].z, dtype=float)
            for note in fig.layout.annotations:
                row = y.index(note.y)
                assert note.yanchor == "bottom" and np.isnan(z[row]).all()  # an empty row: the label is off the data
                assert not np.isnan(z[row + 1]).all()  # right above its tile's first row
        assert list(view.figure.data[0].y) == list(view.exact().data[0].y)  # the file has the screen's rows


def test_a_slide_of_every_head_with_a_query_is_one_map_of_its_rows(src):
    """On a slide, every head with a query in focus: one map, a row per head over the keys, each row's strongest
    key marked with its weight (read from the model's patterns); on screen, still the grid."""
    (view,) = build("heads", src, Theme(), layer=2, query=10)
    slide = view.slide()
    (heat,) = [t for t in slide.data if t.type == "heatmap"]
    patterns = src.obs.patterns[2, :, 10]  # (H, N)
    assert list(heat.y) == [f"head {h}" for h in range(src.obs.n_heads)]
    assert np.allclose(np.asarray(heat.z, dtype=float), patterns)
    marks = {note.y: (note.x, note.text) for note in slide.layout.annotations}
    for h, row in enumerate(patterns):
        key, text = marks[f"head {h}"]
        assert list(heat.x).index(key) == int(row.argmax()) and text == f"<b>{row.max():.2f}</b>"
    assert "where “it” looks in every head" in slide.layout.title.text
    grid = np.asarray(view.figure.data[0].z)  # the screen: every head's whole map in one grid
    assert grid.shape[0] > src.obs.n_tokens and grid.shape[1] > src.obs.n_tokens


def test_the_permutation_slide_shows_the_two_patterns_its_sentence_compares(src):
    (view,) = build("perm", src, Theme(), layer=1, head=0)
    titles = [note.text for note in view.figure.layout.annotations]
    assert len([t for t in view.figure.data if t.type == "heatmap"]) == 4 and any("shuffled input" in t for t in titles)
    slide = view.slide()
    assert len([t for t in slide.data if t.type == "heatmap"]) == 2
    shown = " ".join(note.text for note in slide.layout.annotations).replace("<br>", " ")
    assert "original order, no positions" in shown and "shuffled, then un-shuffled" in shown
    assert slide.layout.yaxis2.showticklabels is False  # the same rows, labelled once


def test_the_slide_box_and_the_attention_caption(src):
    (view,) = build("attention", src, Theme(), layer=1, head=2, query=10, key=2)
    slide = view.slide()
    assert (slide.layout.width, slide.layout.height) == SLIDE_BOX
    rows, cols = list(slide.layout.yaxis.ticktext), list(slide.layout.xaxis.ticktext)
    assert len(rows) < src.obs.n_tokens  # 18 pt: thinned, the focus query and key always labelled
    assert any(src.obs.tokens[10] in r for r in rows) and any(src.obs.tokens[2] in c for c in cols)
    assert view.caption.startswith("L1H2 gives")


@pytest.mark.slow
@needs_chromium
def test_slide_images_are_1920_by_1080_with_the_caption_and_metadata(src):
    from PIL import Image

    (view,) = build("attention", src, Theme(), layer=1, head=2, query=10, key=2)
    record = provenance(view, model=src.loaded.name, text=TEXT)
    png = render.render_view(view, "png", size="slide", caption=True, provenance=record)
    image = Image.open(io.BytesIO(png))
    assert image.size == (1920, 1080)
    band = np.asarray(image.convert("L"))[-60:]
    assert (band < 128).any()  # the caption's text is drawn in the band
    meta = png_text(png)
    assert meta["Description"] == view.caption and meta["Title"] == view.title
    comment = json.loads(meta["Comment"])
    assert comment["model"] == src.loaded.name and comment["text"] == TEXT and comment["view"] == "attention"
    assert comment["selection"]["layer"] == 1 and comment["app version"] == app_version()
    svg = render.render_view(view, "svg", size="slide", caption=True, provenance=record)
    root = ET.fromstring(svg)
    assert (root.get("width"), root.get("height")) == ("1920", "1080")
    assert root.find("{http://www.w3.org/2000/svg}svg") is not None  # the figure, nested unchanged
    desc = root.find("{http://www.w3.org/2000/svg}desc")
    assert desc is not None and desc.text == view.caption
    meta = json.loads(root.find("{http://www.w3.org/2000/svg}metadata").text)
    assert "caption-band" in svg.decode() and meta["view"] == "attention"
    plain = render.render_view(view, "png", size="screen", provenance=record)
    assert png_text(plain)["Description"] == view.caption  # no band on screen size, still in the metadata


def _deck(src):
    items = []
    for key, sel in [("attention", {"layer": 1, "head": 2, "query": 10}), ("lesson.predict", {"query": 10})]:
        (view,) = build(key, src, Theme(), **sel)
        question = predict_question(view, src.obs.tokens) if key == "lesson.predict" else ""
        items.append(make_item(view, provenance(view, model=src.loaded.name, text=TEXT), question=question))
    return items


def test_deck_items_round_trip_through_a_session_file(src):
    items = _deck(src)
    assert [kind for kind, _ in slides(items)] == ["figure", "question", "figure"]
    assert "“it” (position 10)" in items[1]["question"]
    text = dump_session({"deck": items, "layer": 1}, "deck")
    settings, page, notes = load_session(text)
    assert page == "deck" and not notes and settings["deck"] == [check_item(i) for i in items]
    broken = json.loads(text)
    broken["deck"][0]["slide"] = "not a figure"
    settings, _, notes = load_session(json.dumps(broken))
    assert len(settings["deck"]) == 1 and "skipped a deck figure" in notes[0]


def test_pptx_has_a_title_slide_notes_and_pictures_inside(src):
    pptx = pytest.importorskip("pptx")
    from PIL import Image

    def fake(fig):  # a 1920 × 1080 picture without a browser
        buf = io.BytesIO()
        Image.new("RGB", (1920, 1080), "white").save(buf, "PNG")
        return buf.getvalue()

    items = _deck(src)
    items[0]["title"] = "Where “it” looks"
    data = deck_pptx(items, title="Attention from scratch", render=fake)
    prs = pptx.Presentation(io.BytesIO(data))
    deck = list(prs.slides)
    assert len(deck) == 4 and deck[0].shapes.title.text == "Attention from scratch"
    assert src.loaded.name in deck[0].placeholders[1].text and TEXT[:40] in deck[0].placeholders[1].text
    for slide in deck[1:]:
        for shape in slide.shapes:
            assert shape.left >= 0 and shape.left + shape.width <= prs.slide_width
            assert shape.top >= 0 and shape.top + shape.height <= prs.slide_height
    assert deck[1].shapes[0].name.startswith("Where “it” looks")  # the picture carries the slide's title
    assert items[0]["caption"] in deck[1].notes_slide.notes_text_frame.text
    assert "Predict first" in deck[2].shapes[0].text_frame.text
    assert items[1]["caption"] in deck[3].notes_slide.notes_text_frame.text
    page = deck_html(items, title="Attention from scratch")
    assert page.count("class='slide'") == 4 and "Where “it” looks" in page
    retitled = pio.from_json(items[0]["slide"])
    assert retitled.layout.title.text != "Where “it” looks"  # the stored figure is kept; the title is applied on export


def test_a_slide_of_a_long_text_labels_every_token_of_the_window_around_the_focus():
    from viz.figures.theme import SLIDE_TOKENS

    long = DirectSource.for_text(ModelSpec("bundled"), " ".join([TEXT] * 3))
    n = long.obs.n_tokens
    assert n > SLIDE_TOKENS
    (view,) = build("attention", long, Theme(), layer=0, head=1, query=30, key=25)
    full = view.slide()
    assert len(full.layout.yaxis.tickvals) <= SLIDE_TOKENS < n  # thinned, the focus kept
    assert full.data[0].y[30] in full.layout.yaxis.tickvals  # the focus query's own label
    window = view.slide(window=(21, 21 + SLIDE_TOKENS))
    assert len(window.data[0].y) == SLIDE_TOKENS and list(window.layout.yaxis.tickvals) == list(window.data[0].y)
    assert f"tokens 21–{20 + SLIDE_TOKENS} of {n}" in window.layout.title.text.replace("<br>", " ")
    z = np.asarray(window.data[0].z)
    assert np.allclose(z, long.obs.patterns[0, 1, 21 : 21 + SLIDE_TOKENS, 21 : 21 + SLIDE_TOKENS], equal_nan=True)
    outline = [s for s in window.layout.shapes]
    assert outline and min(s.y0 for s in outline) >= -0.5  # the focus outline moved with the window


@pytest.mark.slow
def test_up_to_60_tokens_every_token_is_labelled_on_screen():
    text = " ".join(["The animal didn't cross the street because it was too tired."] * 4)
    long = DirectSource.for_text(ModelSpec("bundled"), text)
    n = long.obs.n_tokens
    assert 50 < n <= 60
    (view,) = build("attention", long, Theme())
    for axis in (view.figure.layout.xaxis, view.figure.layout.yaxis):
        assert len(axis.tickvals) == n
