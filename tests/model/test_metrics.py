"""Per-head metrics and head similarity on patterns with known answers."""

import math

import numpy as np
import pytest

from model.analysis.metrics import METRICS, diagonal_mass, entropy, head_metrics, metrics_table
from model.analysis.similarity import cluster_order, head_similarity, js_distance_matrix, renormalised_rows


def previous_token(n):
    p = np.zeros((n, n), dtype=np.float32)
    p[0, 0] = 1.0
    for i in range(1, n):
        p[i, i - 1] = 1.0
    return p


def test_pure_previous_token_pattern():
    n = 10
    m = head_metrics(previous_token(n)[None], query_mask=np.arange(n) > 0)
    assert m["previous"].item() == pytest.approx(1.0)
    assert m["entropy"].item() == pytest.approx(0.0, abs=1e-6)
    assert m["next"].item() == 0 and m["self"].item() == 0
    assert m["mean_distance"].item() == pytest.approx(1.0)
    assert m["max_weight"].item() == pytest.approx(1.0)
    assert all(v.dtype == np.float32 for v in m.values())


def test_uniform_pattern_metrics():
    n = 8
    p = np.full((1, 2, n, n), 1 / n, dtype=np.float32)
    special = np.zeros(n, dtype=bool)
    special[[0, -1]] = True
    m = head_metrics(p, special=special)
    assert m["entropy"].shape == (1, 2)
    assert m["entropy"][0, 0] == pytest.approx(math.log(n), rel=1e-5)
    assert m["special"][0, 0] == pytest.approx(2 / n)
    assert m["self"][0, 1] == pytest.approx(1 / n)
    # special tokens are not queries: mean |i - j| over rows 1 … n - 2 of a uniform grid
    rows = np.arange(1, n - 1)
    expected = np.abs(rows[:, None] - np.arange(n)[None]).mean()
    assert m["mean_distance"][0, 0] == pytest.approx(expected, rel=1e-5)
    everywhere = head_metrics(p)  # no special tokens: every row, (n² − 1) / (3n)
    assert everywhere["mean_distance"][0, 0] == pytest.approx((n * n - 1) / (3 * n), rel=1e-5)


def test_previous_and_next_count_only_queries_that_have_such_a_neighbour():
    """One definition: a pure previous-token head scores 1 (the first token has no previous one), and the score
    equals Find heads' "previous" relation, which averages over the same queries."""
    from model.analysis.find import find_heads, relation_pairs

    n = 7
    p = previous_token(n)
    special = np.zeros(n, dtype=bool)
    special[0] = True  # [CLS]
    m = head_metrics(p[None, None], special=special)
    assert m["previous"].item() == pytest.approx(1.0)
    assert head_metrics(np.eye(n, k=1, dtype=np.float32)[None] + np.eye(n, k=-(n - 1), dtype=np.float32)[None])[
        "next"
    ].item() == pytest.approx(1.0)
    rng = np.random.default_rng(0)
    patterns = rng.dirichlet(np.ones(n), size=(2, 3, n)).astype(np.float32)
    tokens = ["[CLS]", "a", "b", "c", "d", "e", "[SEP]"]
    special = np.array([t.startswith("[") for t in tokens])
    metrics = head_metrics(patterns, special=special)
    for relation in ("previous", "next"):
        found = find_heads(patterns, relation_pairs(relation, tokens, special), special)
        np.testing.assert_allclose(found.score, metrics[relation], rtol=1e-5)


def test_fully_masked_rows_are_left_out_of_the_averages():
    p = np.eye(4, dtype=np.float32)
    p[3] = 0.0  # a padded query row attends nowhere
    m = head_metrics(p[None])
    assert m["self"].item() == pytest.approx(1.0)  # 3 rows, each all on itself; the dead row does not count


def test_diagonal_mass_offsets():
    p = np.eye(4)
    assert diagonal_mass(p, 0).tolist() == [1, 1, 1, 1]
    assert diagonal_mass(p, 1).tolist() == [0, 0, 0, 0]
    assert diagonal_mass(np.eye(4, k=-1), -1).tolist() == [0, 1, 1, 1]


def test_metrics_table_has_one_row_per_head():
    m = head_metrics(np.full((2, 3, 4, 4), 0.25, dtype=np.float32))
    rows = metrics_table(m)
    assert [(r["layer"], r["head"]) for r in rows] == [(i, j) for i in range(2) for j in range(3)]
    assert set(rows[0]) == {"layer", "head", *METRICS}


def test_entropy_of_one_hot_and_uniform_rows():
    np.testing.assert_allclose(entropy(np.array([[1.0, 0.0], [0.5, 0.5]])), [0.0, math.log(2)])


def test_js_distance_properties():
    n = 6
    a, b = previous_token(n), np.eye(n, dtype=np.float32)
    d = js_distance_matrix(np.stack([a, b, a]))
    assert d.dtype == np.float32 and np.allclose(d, d.T) and np.all(np.diag(d) == 0)
    assert d[0, 2] == pytest.approx(0.0, abs=1e-6)
    # disjoint one-hot rows (except row 0, identical): JS = ln 2 on n - 1 of n rows
    assert d[0, 1] == pytest.approx(math.sqrt(math.log(2) * (n - 1) / n), rel=1e-4)
    assert np.all(d <= math.sqrt(math.log(2)) + 1e-6)


def test_head_similarity_labels_and_row_subsampling():
    p = np.random.default_rng(0).dirichlet(np.ones(300), (2, 3, 300)).astype(np.float32)
    d, pairs = head_similarity(p, max_rows=64)
    assert d.shape == (6, 6) and pairs[4] == (1, 1)
    full, _ = head_similarity(p, max_rows=300)
    np.testing.assert_allclose(d, full, atol=0.02)  # the subsample estimates the full average


def test_head_similarity_renormalises_rows_with_cut_columns():
    # two heads alike on the kept keys but putting different shares on a cut (hidden) key: after cutting,
    # their rows differ only in scale, so renormalised they are identical
    rng = np.random.default_rng(1)
    kept = rng.dirichlet(np.ones(8), (1, 1, 8)).astype(np.float32)
    a = np.concatenate([0.9 * kept, np.full((1, 1, 8, 1), 0.1, np.float32)], -1)
    b = np.concatenate([0.2 * kept, np.full((1, 1, 8, 1), 0.8, np.float32)], -1)
    cut = np.concatenate([a, b], 1)[..., :8]  # (1, 2, 8, 8): the last key hidden
    d, _ = head_similarity(cut)
    assert d[0, 1] == pytest.approx(0.0, abs=1e-3)
    rows = renormalised_rows(np.zeros((2, 4)))
    np.testing.assert_allclose(rows, 0.25)  # a row with no mass left: uniform, not NaN


def test_cluster_order_puts_similar_heads_together():
    d = np.array([[0, 0.9, 0.1, 0.9], [0.9, 0, 0.9, 0.1], [0.1, 0.9, 0, 0.9], [0.9, 0.1, 0.9, 0]])
    order = list(cluster_order(d))
    assert sorted(order) == [0, 1, 2, 3]
    assert abs(order.index(0) - order.index(2)) == 1 and abs(order.index(1) - order.index(3)) == 1
    with pytest.raises(ValueError, match="square"):
        cluster_order(np.zeros((2, 3)))


def test_js_distances_equal_scipys_on_causal_and_full_patterns():
    """The blocked torch computation (pairs j ≥ i, rows cropped to their last used key) against scipy's
    jensenshannon, row by row."""
    from scipy.spatial.distance import jensenshannon

    rng = np.random.default_rng(3)
    for causal in (True, False):
        p = rng.random((5, 11, 11)).astype(np.float32)
        p = np.tril(p) if causal else p
        p /= p.sum(-1, keepdims=True)
        d = js_distance_matrix(p)
        ref = np.array([[np.mean([jensenshannon(a[r], b[r]) ** 2 for r in range(11)]) for b in p] for a in p])
        np.testing.assert_allclose(d, np.sqrt(ref), atol=2e-6)


def test_similarity_compares_fewer_rows_only_when_the_pairs_are_many():
    from model.analysis.similarity import similarity_rows

    assert similarity_rows(24, 10, 10, False) == 10  # a short text: every row
    assert similarity_rows(72, 512, 512, False) == 111  # MiniLM at 512
    assert similarity_rows(270, 512, 512, True) == 16  # SmolLM2 at 512: the floor
    assert similarity_rows(72, 128, 128, False) == 128
