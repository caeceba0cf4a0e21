"""Mixtures of experts and learned sinks as the views show them: the routing view's numbers are the router's, a
learned sink is drawn as its own column, target and metric, and no row is renormalised behind the user's back."""

from __future__ import annotations

import numpy as np
import pytest

from model.analysis.experts import routing
from model.anatomy import anatomy
from model.io.catalog import ModelSpec
from tests.hf_fixtures import FIXTURES
from viz.figures import Theme
from viz.figures.headview import SINK_TARGET, head_view_data, unpack_lines
from viz.views import ViewUnavailableError, build
from viz.views.source import DirectSource

TEXT = "The query asks, the keys answer, and the values come back weighted by how well each key fits the query."


@pytest.fixture(scope="module")
def src():
    return {
        n: DirectSource.for_text(ModelSpec("folder", path=str(FIXTURES / n)), TEXT) for n in ("qwen3_moe", "gpt_oss")
    }


def test_routing_counts_the_choices():
    w = np.array([[0.7, 0.3, 0, 0], [0, 0.6, 0.4, 0], [0.5, 0, 0, 0.5]])
    r = routing(w)
    assert list(r.first) == [0, 1, 0] and r.load.tolist() == pytest.approx([2 / 6, 2 / 6, 1 / 6, 1 / 6])
    assert r.unused == [] and 0.9 < r.evenness < 1.0
    assert routing(np.array([[1.0, 0], [1.0, 0]])).evenness == 0.0


def test_the_experts_view_draws_the_routers_weights(src):
    s = src["qwen3_moe"]
    assert s.obs.expert_layers == (0, 2)
    text, matrix, load = build("experts", s, Theme(), layer=2)
    weights = s.obs.experts[1]  # (N, E), layer 2
    assert np.allclose(np.asarray(matrix.figure.data[0].z, dtype=float), weights, atol=1e-6)
    assert ((weights > 0).sum(-1) == 2).all() and (weights.sum(-1) < 1).all()  # norm_topk_prob false
    assert "so a row sums to less than 1" in matrix.caption
    firsts = np.bincount(weights.argmax(-1), minlength=4)
    assert f"is the first choice of {firsts.max()} of {len(weights)} tokens" in text.caption
    chips = next(d for d in text.figure.data if d.mode == "text")
    assert [c[0] for c in chips.customdata] == weights.argmax(-1).tolist()
    shares = np.asarray(load.figure.data[0].y, dtype=float)
    assert shares.sum() == pytest.approx(1.0) and "Every expert is used." in load.caption
    with pytest.raises(ViewUnavailableError, match="layer 1 has a dense feed-forward"):
        build("experts", s, Theme(), layer=1)
    ff = anatomy(s.loaded.model.cfg).part("ff")
    assert ff.label == "mixture of experts" and "top 2" in ff.detail and "in 2 of 3 layers" in ff.detail


def test_a_dense_model_has_no_experts_view():
    s = DirectSource.for_text(ModelSpec("folder", path=str(FIXTURES / "llama")), TEXT)
    with pytest.raises(ViewUnavailableError, match="no mixture of experts"):
        build("experts", s, Theme())


def test_a_learned_sink_is_its_own_column_and_rows_are_not_renormalised(src):
    s = src["gpt_oss"]
    obs = s.obs
    assert np.allclose(obs.patterns.sum(-1) + obs.sink, 1.0, atol=1e-5)  # the tokens' weights and the sink: all
    (one,) = build("attention", s, Theme(), layer=1, head=2)
    sink = [d for d in one.figure.data if d.name == "sink"]
    assert sink and np.allclose(np.asarray(sink[0].z, dtype=float)[:, 0], obs.sink[1, 2], atol=1e-6)
    drawn = np.asarray(one.figure.data[0].z, dtype=float)
    assert np.allclose(np.nan_to_num(drawn).sum(-1), obs.patterns[1, 2].sum(-1), atol=1e-5)  # as computed
    assert one.figure.data[0].zmax == pytest.approx(max(obs.patterns[1, 2].max(), obs.sink[1, 2].max()))
    assert "learned sink" in one.caption and "nothing here is renormalised" in one.caption
    metrics = obs.metrics
    assert np.allclose(metrics["sink"][1, 2], obs.sink[1, 2].mean(), atol=1e-6)  # no special tokens here
    data = head_view_data(obs.patterns[1], obs.tokens, [2], 0.05, Theme(), sink=obs.sink[1])
    assert data["sinkLabel"] == SINK_TARGET
    n = len(obs.tokens)
    to_sink = {q: w for q, k, w in zip(*unpack_lines(data["heads"][0]), strict=True) if k == n}
    assert to_sink and all(abs(w - obs.sink[1, 2, q]) < 1e-3 for q, w in to_sink.items())
    _grid, head, given = build("lesson.sinks", s, Theme(), layer=1, head=2)
    assert given.caption.startswith("Besides any token it may pick as a sink, this model was given one")
    assert "to its learned sink, which no panel draws" in head.caption


def test_a_long_text_on_a_sink_model_keeps_its_first_tokens_exactly(src):
    from model.whole import observe_long

    loaded = src["gpt_oss"].loaded
    with pytest.raises(ValueError, match="does not carry learned attention sinks"):
        observe_long(loaded.model, loaded.tokenizer, TEXT)
