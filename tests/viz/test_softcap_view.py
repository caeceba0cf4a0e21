"""A Gemma 2 model caps every attention score at ±c (c·tanh(s/c)): the raw-scores view draws the capped scores the
softmax reads, says so in its title, and its caption counts how near the drawn scores come to the cap."""

from __future__ import annotations

import re

import numpy as np
import torch

from model.io.catalog import ModelSpec
from tests.hf_fixtures import FIXTURES
from viz.figures import Theme
from viz.views import build
from viz.views.source import DirectSource

TEXT = "The query asks, the keys answer, and the values come back weighted by how well each key fits the query."


def test_the_scores_drawn_are_the_capped_ones_the_softmax_reads():
    src = DirectSource.for_text(ModelSpec("folder", path=str(FIXTURES / "gemma2")), TEXT)
    cfg = src.loaded.model.cfg
    assert cfg.attn_softcap == 0.25
    (shown,) = build("attention", src, Theme(), layer=3, head=0, mode="scores")
    assert shown.figure.layout.title.text.startswith("Layer 3, head 0 — scores 0.25·tanh(QKᵀ·0.408 / 0.25)")
    drawn = np.asarray(shown.figure.data[0].z, dtype=float)
    seen = drawn[np.isfinite(drawn)]
    assert np.abs(seen).max() < 0.25
    # the softmax of the drawn (capped) scores is the model's own pattern
    weights = torch.softmax(torch.tensor(np.where(np.isfinite(drawn), drawn, -np.inf)), -1).numpy()
    assert np.allclose(weights, src.obs.patterns[3, 0], atol=1e-5)
    said = re.search(
        r"the largest drawn here is ([\d.]+) \(([\d.]+) before the cap\), (\d+) of (\d+) within 10 % of the cap",
        shown.caption,
    )
    assert said, shown.caption
    assert float(said[1]) == float(f"{np.abs(seen).max():.3g}")
    assert int(said[3]) > 0  # this fixture's scores reach the cap
    assert int(said[3]) == int((np.abs(seen) > 0.225).sum()) and int(said[4]) == seen.size
    full = src.full()
    q, k = full.q[3, 0], full.k[3, full.kv_head(0)]  # (N, d_k) each
    raw = np.abs(q @ k.T * cfg.attn_scale)[np.isfinite(drawn)]
    assert abs(float(said[2]) - raw.max()) <= 1e-3 * raw.max() + 5e-4  # the uncapped score, from q and k


def test_an_uncapped_model_says_nothing_of_a_cap():
    src = DirectSource.for_text(ModelSpec("folder", path=str(FIXTURES / "llama")), TEXT)
    (shown,) = build("attention", src, Theme(), layer=0, head=0, mode="scores")
    assert "scores QKᵀ/√d_k" in shown.figure.layout.title.text and "cap" not in shown.caption


def test_the_step_by_step_views_compute_with_the_models_own_scale_and_cap():
    """Q/K/V's score panels, one query's sum and the animation's scaling step use query_pre_attn_scalar^-½ (not
    1/√d_k) and the cap, so their softmax is the model's pattern; their titles and captions name both."""
    src = DirectSource.for_text(ModelSpec("folder", path=str(FIXTURES / "gemma2")), TEXT)
    steps, _ = src.steps(3, 0)
    assert np.allclose(steps.pattern, src.obs.patterns[3, 0], atol=1e-5)
    (scores,) = build("qkv.scores", src, Theme(), layer=3, head=0, query=5)
    assert scores.caption.startswith("Multiplying by this model's own scale 0.408 (not 1/√12 = 0.289), then capping")
    assert "QKᵀ × 0.408, capped ±0.25" in [a.text for a in scores.figure.layout.annotations]
    (one,) = build("qkv.query", src, Theme(), layer=3, head=0, query=5)
    (weights,) = [t for t in one.figure.data if t.name == "weight"]  # horizontal bars: one per key
    assert np.allclose(np.asarray(weights.x, dtype=float)[:6], src.obs.patterns[3, 0, 5, :6], atol=1e-5)
    from viz.views.animate import STEPS

    (frame,) = build("anim.frame", src, Theme(), layer=3, head=0, query=5, step=STEPS.index("÷√d_k"))
    assert "multiply by the model's scale 0.408, cap at ±0.25" in frame.figure.layout.title.text
    assert frame.caption.startswith("Multiplying by this model's own scale 0.408")
    assert (
        "×0.408" in frame.figure.layout.title.subtitle.text and "÷√d_k" not in frame.figure.layout.title.subtitle.text
    )
