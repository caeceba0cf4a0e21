"""Every view as a slide (presentation theme, 1920 × 1080, caption band on), laid out by chromium: every text
inside the image, tick labels ≥ 44.8 px (18 pt as LibreOffice prints them) and titles ≥ 48 px as shown, no two kinds
of text overlapping, no tick label overprinting its neighbour, and no
title, legend, colour bar or caption over the data."""

from __future__ import annotations

import pytest

from model.io.catalog import ModelSpec
from scripts.svg_boxes import data_boxes, is_tick, outside, over_data, overlaps, text_boxes, text_group
from tests.hf_fixtures import FIXTURES
from tests.viz.seq2seq import CROSS_VIEWS, RELATIVE_VIEWS, decoder_source
from viz.export.render import render_view
from viz.figures import Theme
from viz.figures.theme import SLIDE_SCALE, SLIDE_TICK_PX
from viz.views import REGISTRY, ViewUnavailableError, build
from viz.views.source import DirectSource

pytestmark = pytest.mark.slow
TEXT = "The animal didn't cross the street because it was too tired."
UNAVAILABLE = {
    "next.predictions",
    "next.generation",
    "lesson.gqa",
    "corpus.scatter",
    "corpus.spread",
    "corpus.examples",
    "causes.attribution",  # needs a decoder's linear unembedding
}
#: patching, its estimate and path patching: the masked text against a corrupted copy (one noun swapped)
PATCHED = {"causes.patching", "causes.attribution_patching", "causes.paths"}
MOE_VIEWS = {"experts": {"layer": 2}}  # on Qwen3-MoE's fixture: layer 2 has experts (layer 1 is dense)
#: a decoder's views laid out on SmolLM2 (the others stay on the bundled encoder), with their selection
DECODER_VIEWS = {"lesson.needle": {"lengths": (256, 320), "depths": (0, 100)}}
MASKED = TEXT.replace("tired", "[MASK]")  # the logit lens of an encoder reads its answer at a [MASK]
CORRUPTED = MASKED.replace("animal", "dog")


@pytest.fixture(scope="module")
def page(browser):
    page = browser.new_page(viewport={"width": 1920, "height": 1080})
    yield page
    page.close()


def test_every_slide_is_readable_from_the_back_row(page):
    plain = DirectSource.for_text(ModelSpec("bundled"), TEXT)
    masked = DirectSource.for_text(ModelSpec("bundled"), MASKED)
    decoder = DirectSource.for_text(ModelSpec("smollm2"), TEXT)
    experts = DirectSource.for_text(ModelSpec("folder", path=str(FIXTURES / "qwen3_moe")), TEXT)  # with a dense layer
    problems, checked, titles = [], 0, 0
    for key in REGISTRY:
        src = decoder if key in DECODER_VIEWS else masked if key == "causes.lens" or key in PATCHED else plain
        src = decoder_source() if key in CROSS_VIEWS else src  # an encoder–decoder's decoder
        src = experts if key in MOE_VIEWS else src  # a mixture of experts' routing
        if key in RELATIVE_VIEWS:  # position inside the scores: DeBERTa's split, MPNet's bias
            src = DirectSource.for_text(ModelSpec("folder", path=str(FIXTURES / RELATIVE_VIEWS[key])), TEXT)
        default = {"layer": 1} if "layer" in REGISTRY[key].selection else {}
        selection = DECODER_VIEWS.get(key, MOE_VIEWS.get(key, default))
        selection = {"corrupted": CORRUPTED} if key in PATCHED else selection
        try:
            views = build(key, src, Theme(), **selection)
        except ViewUnavailableError:
            assert key in UNAVAILABLE, key
            continue
        for view in views:
            svg = render_view(view, "svg", size="slide", caption=True)
            boxes = text_boxes(page, svg)
            assert (boxes[0]["W"], boxes[0]["H"]) == (1920, 1080), view.key
            checked += len(boxes)
            problems += [f"{view.key}: {b['text'][:30]!r} outside the image" for b in outside(boxes)]
            for b in boxes:
                shown = b["size"] * (1 if "caption-band" in b["classes"] else SLIDE_SCALE)
                if is_tick(b) and shown < SLIDE_TICK_PX - 0.5:
                    problems.append(f"{view.key}: tick {b['text'][:20]!r} at {shown:.0f} px")
                if b["classes"].split()[0] == "gtitle":
                    titles += 1
                    if shown < 48 - 0.5:
                        problems.append(f"{view.key}: title {b['text'][:30]!r} at {shown:.0f} px")
            problems += [
                f"{view.key}: {text_group(a)} {a['text'][:20]!r} overlaps {text_group(b)} {b['text'][:20]!r}"
                for a, b in overlaps(boxes)
            ]
            problems += [
                f"{view.key}: tick {a['text'][:20]!r} overprints {b['text'][:20]!r}"
                for a, b in overlaps(boxes, 2.0, same=True)
            ]
            problems += [
                f"{view.key}: {b['text'][:30]!r} over the data" for b, _ in over_data(boxes, data_boxes(page, svg))
            ]
    assert checked > 1000 and titles > 40
    assert not problems, "\n".join(problems[:400])
