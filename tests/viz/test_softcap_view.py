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
