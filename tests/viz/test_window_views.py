"""A model with sliding-window layers says so where its attention is drawn: the attention map's title and caption
(the window read back from the drawn pattern), the overview's layer labels, the Masks page's caption."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from model.io.catalog import ModelSpec
from viz.figures.common import Theme
from viz.views import build
from viz.views.source import DirectSource

MISTRAL = Path(__file__).resolve().parents[1] / "fixtures" / "hf" / "mistral"  # window 6 on every layer
TEXT = "The query asks, the keys answer, and the values come back weighted by how well each key fits."


@pytest.fixture(scope="module")
def src():
    return DirectSource.for_text(ModelSpec("folder", path=str(MISTRAL)), TEXT)


def test_attention_map_names_the_window_and_reads_it_from_the_pattern(src):
    (view,) = build("attention", src, Theme(), layer=1, head=2)
    assert view.figure.layout.title.text.startswith("Layer 1 (sliding window 6), head 2")
    pattern = src.obs.patterns[1, 2]
    widest = int((pattern > 0).sum(-1).max())
    assert widest == 6 < len(src.obs.tokens)
    assert f"the widest row reaches {widest} of {len(src.obs.tokens)} keys" in view.caption
    assert "its 6 latest keys" in view.caption
    scores = build("attention", src, Theme(), layer=1, head=2, mode="scores")[0].caption
    assert scores.endswith(view.caption[view.caption.index("Layer 1 attends") :])  # the same window sentence


def test_overview_labels_sliding_layers(src):
    (view,) = build("overview", src, Theme())
    assert list(view.figure.layout.yaxis.ticktext) == ["L0 w6", "L1 w6", "L2 w6"]
    assert "sliding window of 6" in view.figure.layout.title.text


def test_masks_caption_says_the_window(src):
    (view,) = build("masks.causal", src, Theme(), layer=0, head=0)
    assert "Layer 0 attends through a sliding window" in view.caption


def test_global_models_say_nothing_of_windows():
    plain = DirectSource.for_text(ModelSpec("bundled"), "The cat sat on the mat.")
    (view,) = build("attention", plain, Theme())
    assert "window" not in view.figure.layout.title.text and "window" not in view.caption
    assert np.all(np.char.startswith(np.array(build("overview", plain, Theme())[0].figure.layout.yaxis.ticktext), "L"))
