"""Heads whose weights are NaN or Inf are not computable: never called identical, never given a kind."""

from __future__ import annotations

import numpy as np

from model.analysis.decoder import strongest_sink
from model.analysis.kinds import NOT_COMPUTABLE, head_kinds
from model.analysis.similarity import cluster_order, head_similarity
from model.analysis.sinks import head_types


def patterns_with_broken_heads() -> np.ndarray:
    rng = np.random.default_rng(0)
    p = rng.random((2, 3, 6, 6)).astype(np.float32)
    p /= p.sum(-1, keepdims=True)
    p[0, 1] = np.nan
    p[1, 2, 3, 4] = np.nan  # one cell is enough
    return p


def test_nan_heads_compare_with_nothing_and_come_last():
    dist, pairs = head_similarity(patterns_with_broken_heads())
    broken = [pairs.index((0, 1)), pairs.index((1, 2))]
    assert np.isnan(dist[broken]).all() and np.isnan(dist[:, broken]).all()
    good = [k for k in range(6) if k not in broken]
    sub = dist[np.ix_(good, good)]
    assert np.isfinite(sub).all() and (sub[~np.eye(4, dtype=bool)] > 0).all()
    order = cluster_order(dist)
    assert sorted(order.tolist()) == list(range(6)) and set(order[-2:].tolist()) == set(broken)


def test_nan_heads_get_no_kind_and_no_type():
    p = patterns_with_broken_heads()
    tokens = ["[CLS]", "a", "b", "c", "d", "[SEP]"]
    special = np.array([1, 0, 0, 0, 0, 1], dtype=bool)
    kinds = head_kinds(p, tokens, special)
    assert kinds.kind[0, 1] == kinds.kind[1, 2] == NOT_COMPUTABLE
    assert kinds.counts()[NOT_COMPUTABLE] == 2 and NOT_COMPUTABLE not in kinds.kind[[0, 1], [0, 0]]
    types = head_types(p, tokens, special)
    assert types[0, 1] == types[1, 2] == "not computable" and (types != "not computable").sum() == 4


def test_the_strongest_sink_skips_nan_heads():
    p = patterns_with_broken_heads()
    p[1, 0, 1:, 0] = 0.9  # the real strongest
    p[0, 1] = np.nan
    assert strongest_sink(p) == (1, 0)
    assert strongest_sink(np.full((1, 2, 4, 4), np.nan, dtype=np.float32)) == (0, 0)


def test_an_observation_finds_its_finite_heads_once(monkeypatch):
    from model.io.catalog import ModelSpec, load
    from model.observe import observe

    loaded = load(ModelSpec("bundled"))
    obs = observe(loaded.model, loaded.tokenizer, "The cat sat on the mat.")
    obs.patterns = patterns_with_broken_heads()  # as a checkpoint with NaN weights would give
    first = obs.finite
    assert first.tolist() == [[True, False, True], [True, True, False]]
    calls = {"n": 0}
    real = np.isfinite
    monkeypatch.setattr(np, "isfinite", lambda *a, **k: calls.__setitem__("n", calls["n"] + 1) or real(*a, **k))
    assert obs.finite is first and calls["n"] == 0  # the page-top notice asks on every run: no second pass


def test_all_finite_is_exact_even_where_the_fast_sum_overflows():
    import torch

    from model.io.state import all_finite

    weights = torch.randn(300, 64)
    assert all_finite(weights) and all_finite(weights.half()) and all_finite(weights.double())
    for bad in (float("nan"), float("inf"), -float("inf")):
        broken = weights.clone()
        broken[17, 3] = bad
        assert not all_finite(broken)
    assert all_finite(torch.full((4,), 3e38))  # the sum overflows, every value is finite
    assert all_finite(torch.full((8,), 6e4, dtype=torch.float16))
