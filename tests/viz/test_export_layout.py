"""Every view × {default, presentation} × {10 tokens on the bundled model, 512 tokens on MiniLM, 72 tokens
on SmolLM2 (30 layers × 9 heads, the decoder views)}:
export SVG, lay it out in chromium, and check that every text lies inside the image, that tick labels are at
least the theme's size, and that no two texts of different kinds (title, ticks, axis titles, legend, colour
bar, subplot titles) overlap. The dark theme changes colours only: every view in it is checked to be the
default figure but for its colours, so its layout is the one checked here."""

from __future__ import annotations

import re

import numpy as np
import plotly.graph_objects as go
import pytest

from model.io.catalog import ModelSpec
from scripts.svg_boxes import is_tick, outside, overlaps, text_boxes, text_group
from tests.viz.seq2seq import CROSS_VIEWS, RELATIVE_VIEWS, decoder_source
from viz.export.render import render_image
from viz.figures import Theme
from viz.views import REGISTRY, ViewUnavailableError, build
from viz.views.source import DirectSource

pytestmark = pytest.mark.slow

SHORT = ("bundled", "The cat sat on the mat.")
LONG = ("minilm", " ".join(["The animal didn't cross the street because it was too tired, and the rain fell."] * 40))
THEMES = {"default": Theme(), "presentation": Theme(presentation=True)}
#: views that cannot be drawn in a case, and why (anything else unavailable is a failure)
DECODER_ONLY = {"next.predictions", "next.generation", "lesson.gqa", "lesson.needle"}  # next-token head; K/V heads
CORPUS = {"corpus.scatter", "corpus.spread", "corpus.examples"}  # need a stored profile: see the test below
# the lens and attribution read an answer: an encoder's at a [MASK] (the short text has none), MiniLM has no head;
# attribution needs a linear unembedding (a decoder's)
CAUSES = {"causes.lens", "causes.attribution", "causes.patching", "causes.attribution_patching", "causes.paths"}
MOE = {"experts"}  # a mixture of experts' routing: on gpt-oss's fixture, in a test of its own below
RELATIVE = set(RELATIVE_VIEWS)  # DeBERTa's score split, the relative bias: on their fixtures, in a test below
EXPECTED_UNAVAILABLE = {  # cross-attention: only an encoder–decoder's decoder (see the test of its own below)
    "bundled": {*DECODER_ONLY, *CORPUS, *CAUSES, *CROSS_VIEWS, *MOE, *RELATIVE},
    "minilm": {
        "flow",
        "lesson.mlm",
        "lesson.ablation_predictions",
        *DECODER_ONLY,
        *CORPUS,
        *CAUSES,
        *CROSS_VIEWS,
        *MOE,
        *RELATIVE,
    },
    "smollm2": {"flow", "lesson.mlm", "lesson.ablation_predictions", *CORPUS, *CROSS_VIEWS, *MOE, *RELATIVE},
}
SENTENCE = "The cat sat on the mat because it was tired, and then the dog barked."
DECODER = ("smollm2", " ".join([SENTENCE] * 4))
CASES = pytest.mark.parametrize(
    "case", [SHORT, LONG, DECODER], ids=["bundled-10-tokens", "minilm-512-tokens", "smollm2-72-tokens"]
)
#: (model, view) -> the text it is drawn on, where not the case's: patching every position of every layer of
#: SmolLM2 at 72 tokens took 230 s of this test; on the indirect-object prompt its grids keep all 30 layers. Value
#: zeroing and attribution there: 3.5 s instead of 16 s, the per-head mixing grid 0.5 s instead of 9.5 s (their long
#: labels are checked at 512 tokens on MiniLM, and SmolLM2's at 300 tokens in a page column below)
IOI = "When Mary and John went to the store, John gave a drink to"
PATCHED = ("causes.patching", "causes.attribution_patching", "causes.paths")
TEXTS = {("smollm2", k): IOI for k in ("mixing", "mixing.compare", "mixing.heads", *PATCHED)}
#: (model, view) -> the selection it needs to draw: patching a corrupted copy of its text (the other name)
SELECTIONS = {
    ("smollm2", "causes.patching"): {"corrupted": IOI.replace("John gave", "Mary gave"), "kinds": ("z", "resid_pre")},
    ("smollm2", "causes.attribution_patching"): {"corrupted": IOI.replace("John gave", "Mary gave")},
    ("smollm2", "causes.paths"): {"corrupted": IOI.replace("John gave", "Mary gave")},
    ("smollm2", "lesson.needle"): {"lengths": (256, 320), "depths": (0, 100)},  # four short haystacks
}


SOURCES: dict[tuple[str, str], DirectSource] = {}


@pytest.fixture(scope="module", autouse=True)
def _let_go():
    """The sources (two SmolLM2s, MiniLM at 512 tokens and their analyses) are let go with this file: the worker
    that ran it goes on to other files (scripts/test.sh runs three workers)."""
    yield
    SOURCES.clear()


def source(case: tuple[str, str], key: str = "") -> DirectSource:
    """The source a view of a case is drawn from (its own text where TEXTS names one), one per text for every
    theme and test: its analyses are computed once."""
    text = TEXTS.get((case[0], key), case[1])
    if (case[0], text) not in SOURCES:
        SOURCES[case[0], text] = DirectSource.for_text(ModelSpec(case[0]), text)
    return SOURCES[case[0], text]


@pytest.fixture(scope="module")
def page(browser):
    page = browser.new_page()
    yield page
    page.close()


@CASES
@pytest.mark.parametrize("theme_name", list(THEMES))
def test_every_text_of_every_view_is_inside_readable_and_apart(page, case, theme_name):
    kind = case[0]
    src = source(case)
    assert src.obs.n_tokens == {"minilm": 512, "smollm2": 72}.get(kind, src.obs.n_tokens) and src.obs.n_tokens >= 6
    theme = THEMES[theme_name]
    problems, checked = [], 0
    for key in REGISTRY:
        try:
            views = build(key, source(case, key), theme, **SELECTIONS.get((kind, key), {}))
        except ViewUnavailableError:
            assert key in EXPECTED_UNAVAILABLE.get(kind, set()), f"{key} unavailable"
            continue
        found, count = laid_out(page, views, theme)
        problems += found
        checked += count
    assert checked > 1000
    assert not problems, "\n".join(problems[:40])


def laid_out(page, views, theme: Theme) -> tuple[list[str], int]:
    """The problems of ``views`` exported as SVG and laid out in chromium, and how many texts were checked."""
    problems, checked = [], 0
    for view in views:
        boxes = text_boxes(page, render_image(view.figure, "svg"))
        checked += len(boxes)
        problems += [f"{view.key}: {b['text'][:30]!r} outside the image" for b in outside(boxes)]
        problems += [
            f"{view.key}: tick {b['text'][:20]!r} at {b['size']} px"
            for b in boxes
            if is_tick(b) and b["size"] < theme.sizes.tick - 0.5
        ]
        problems += [
            f"{view.key}: {text_group(a)} {a['text'][:20]!r} overlaps {text_group(b)} {b['text'][:20]!r}"
            for a, b in overlaps(boxes)
        ]
    return problems, checked


@pytest.mark.parametrize("theme_name", list(THEMES))
def test_the_cross_attention_views_are_inside_readable_and_apart(page, theme_name):
    """An encoder–decoder's decoder: the target's tokens on the source's, and every head's thumbnails; its direct
    logit attribution with the cross-attention heads beside its own, its stream with cross-attention as a sublayer."""
    src, problems, checked = decoder_source(), [], 0
    for key in [*sorted(CROSS_VIEWS), "causes.attribution", "block.stream"]:
        chosen = {k: v for k, v in {"layer": 1, "head": 2}.items() if k in REGISTRY[key].selection}
        found, count = laid_out(page, build(key, src, THEMES[theme_name], **chosen), THEMES[theme_name])
        problems += found
        checked += count
    assert checked > 30  # titles, subtitles, ticks of both axes, colour bar, head labels
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("theme_name", list(THEMES))
def test_position_inside_the_scores_exports_cleanly(page, theme_name):
    """DeBERTa's score split (four maps, then a query's row as stacked bars with a legend) and MPNet's relative bias
    beside the content scores, on their tiny fixtures; on both, the Q / K / V steps with the position term as a step
    of its own (four score panels, one query's five columns)."""
    from tests.hf_fixtures import FIXTURES

    problems, checked = [], 0
    cases = [*RELATIVE_VIEWS.items(), *((k, f) for k in ("qkv.scores", "qkv.query") for f in ("mpnet", "deberta-v2"))]
    for key, family in cases:
        src = DirectSource.for_text(ModelSpec("folder", path=str(FIXTURES / family)), SENTENCE)
        found, count = laid_out(page, build(key, src, THEMES[theme_name], layer=1, head=2, query=3), THEMES[theme_name])
        problems += found
        checked += count
    assert checked > 120
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("theme_name", list(THEMES))
def test_experts_and_learned_sinks_export_cleanly(page, theme_name):
    """gpt-oss in miniature: the routing view's three figures, and the views that draw a learned sink beside the
    tokens (its own column, its own panel, its share in a title)."""
    from tests.hf_fixtures import FIXTURES

    src = DirectSource.for_text(ModelSpec("folder", path=str(FIXTURES / "gpt_oss")), SENTENCE)
    problems, checked = [], 0
    for key in ("experts", "attention", "heads", "overview", "lesson.sinks", "qkv.softmax", "qkv.query"):
        found, count = laid_out(page, build(key, src, THEMES[theme_name], layer=1), THEMES[theme_name])
        problems += found
        checked += count
    assert checked > 100
    assert not problems, "\n".join(problems)


COLOUR = re.compile(r"#[0-9a-fA-F]{3,8}\b|rgba?\([^)]*\)")


def differences(a, b, path: str = "") -> list[str]:
    """Where two figures (``to_plotly_json`` dicts) differ other than in colour: a key naming a colour may
    differ, and so may the colours written inside a text (a subtitle's ``<span style='color:…'>``)."""
    if isinstance(a, dict) and isinstance(b, dict):
        return [d for k in a.keys() | b.keys() for d in differences(a.get(k), b.get(k), f"{path}.{k}")]
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)) and len(a) == len(b):
        return [d for i, (x, y) in enumerate(zip(a, b)) for d in differences(x, y, f"{path}[{i}]")]
    if "color" in path.rsplit(".", 1)[-1]:
        return []
    if any(isinstance(x, np.ndarray) and x.dtype.kind not in "biufc" for x in (a, b)):  # labels, hover texts
        return differences(np.asarray(a).tolist(), np.asarray(b).tolist(), path)
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        same = np.shape(a) == np.shape(b) and np.array_equal(np.asarray(a), np.asarray(b), equal_nan=True)
        return [] if same else [path]
    if isinstance(a, str) and isinstance(b, str):
        return [] if COLOUR.sub("#", a) == COLOUR.sub("#", b) else [f"{path}: {a[:40]!r} vs {b[:40]!r}"]
    return [] if a == b else [f"{path}: {str(a)[:40]!r} vs {str(b)[:40]!r}"]


@CASES
def test_the_dark_theme_changes_colours_only(case):
    """So the dark figures' texts lie where the default ones were checked to lie (above)."""
    checked, changed = 0, []
    for key in REGISTRY:
        selection = SELECTIONS.get((case[0], key), {})
        try:
            light = build(key, source(case, key), THEMES["default"], **selection)
        except ViewUnavailableError:
            continue
        dark = build(key, source(case, key), Theme(dark=True), **selection)
        assert [v.key for v in light] == [v.key for v in dark], key
        for a, b in zip(light, dark):
            checked += 1
            fig_a, fig_b = a.figure.to_plotly_json(), b.figure.to_plotly_json()
            changed += [f"{a.key}{d}" for d in differences(fig_a, fig_b)]
            bg = (fig_a["layout"].get("paper_bgcolor"), fig_b["layout"].get("paper_bgcolor"))
            assert bg[0] != bg[1] or not bg[0], f"{a.key}: the dark theme kept the page colour {bg[0]}"
    assert checked > 40
    assert not changed, "\n".join(changed[:20])


def test_presentation_ticks_are_readable_on_a_1920px_slide():
    assert Theme(presentation=True).sizes.tick >= 18
    assert Theme().sizes.tick >= 12


@pytest.mark.parametrize("kind", ["bundled", "minilm"])
def test_corpus_views_export_cleanly(page, kind, tmp_path):
    """The corpus views need a stored profile: a small one is made first (the registry loop above skips them)."""
    from model.profile.corpus import bundled_documents
    from model.profile.run import run_profile

    docs = bundled_documents()[::40][:24]
    profile = run_profile(ModelSpec(kind), docs, tmp_path, corpus_name="held-out sample")
    src = DirectSource.for_text(ModelSpec(kind), SHORT[1])
    problems = []
    for theme in THEMES.values():
        for key in ("corpus.scatter", "corpus.spread", "corpus.examples"):
            for view in build(key, src, theme, profile=str(profile.path)):
                assert (view.caption and "24 documents" in view.caption) or key == "corpus.examples", key
                boxes = text_boxes(page, render_image(view.figure, "svg"))
                problems += [f"{view.key}: {b['text'][:30]!r} outside the image" for b in outside(boxes)]
                problems += [
                    f"{view.key}: {text_group(a)} {a['text'][:20]!r} overlaps {text_group(b)} {b['text'][:20]!r}"
                    for a, b in overlaps(boxes)
                ]
    assert not problems, "\n".join(problems[:40])


SCREEN_COLUMN = 1100  # px: the page's column on a laptop, narrower than the exported figure


def test_side_by_side_panels_keep_their_labels_off_each_other_in_a_screen_column(page, tmp_path):
    """SmolLM2's Beyond-the-weights panels (block means over 300 tokens: labels like "tokens 12–15") and the
    corpus page's top documents, drawn as wide as a laptop's page column: no panel's tick labels over the previous
    heatmap, no tick labels over each other."""
    from model.observe import Options
    from model.profile.corpus import bundled_documents
    from model.profile.run import run_profile
    from scripts.svg_boxes import data_boxes, over_data
    from viz.figures.common import set_export_width

    long = " ".join([DECODER[1]] * 5)
    smol = DirectSource.for_text(ModelSpec("smollm2"), long, Options(max_len=300))
    assert smol.obs.n_tokens == 300
    profile = run_profile(ModelSpec("bundled"), bundled_documents()[::40][:24], tmp_path, corpus_name="sample")
    bundled = DirectSource.for_text(ModelSpec("bundled"), SHORT[1])
    views = [*build("mixing", smol, Theme()), *build("corpus.examples", bundled, Theme(), profile=str(profile.path))]
    problems = []
    for view in views:
        fig = set_export_width(go.Figure(view.figure), SCREEN_COLUMN)
        svg = render_image(fig, "svg")
        boxes, data = text_boxes(page, svg), data_boxes(page, svg)
        ticks = sorted({text_group(b) for b in boxes if is_tick(b)})
        problems += [f"{view.key}: tick {b['text']!r} over a heatmap" for b, _ in over_data(boxes, data, ticks)]
        problems += [f"{view.key}: {a['text']!r} over {b['text']!r}" for a, b in overlaps(boxes, 2.0, same=True)]
    assert not problems, "\n".join(problems[:20])
