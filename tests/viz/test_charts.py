"""Bars, lines, positional figures and the query/key figures: each builder's output, asserted."""

import numpy as np
import pytest

from model.analysis.steps import explain_query
from viz.figures import (
    Theme,
    change_bars,
    encoding_curves,
    encoding_heatmap,
    position_similarity,
    prediction_bars,
    qk_scatter,
    query_explained,
    scaling_figure,
)
from viz.figures.query import label_offsets


def test_change_bars_one_bar_per_token_in_order():
    fig = change_bars(["a", "b", "a"], [0.1, 0.5, 0.2], title="change")
    (bar,) = fig.data
    assert list(bar.y) == [0.1, 0.5, 0.2] and len(set(bar.x)) == 3  # the repeated token keeps its own bar
    assert fig.layout.yaxis.title.text == "relative change" and fig.layout.title.text == "change"


def test_prediction_bars_best_on_top_as_percentages():
    fig = prediction_bars(["light", "darkness"], [0.6, 0.1], title="p")
    (bar,) = fig.data
    assert list(bar.x) == [0.6, 0.1] and list(bar.y) == ["light", "darkness"]
    assert fig.layout.yaxis.autorange == "reversed" and fig.layout.xaxis.tickformat == ".0%"
    flat = prediction_bars(["a", "b", "c"], [0.0031, 0.0030, 0.0028])  # a flat guess: ticks 0.05 % apart
    assert flat.layout.xaxis.tickformat == ".2%"


def test_scaling_figure_has_both_variants_of_each_metric():
    demo = {"d_k": np.array([4, 16])}
    for metric in ("entropy", "max_weight", "gradient"):
        demo[f"{metric}_scaled"] = np.array([1.0, 1.0])
        demo[f"{metric}_unscaled"] = np.array([0.5, 0.1])
    fig = scaling_figure(demo, theme=Theme(presentation=True))
    assert len(fig.data) == 6 and {t.name for t in fig.data} == {"scaled", "unscaled"}
    assert [t.showlegend for t in fig.data] == [True, True, False, False, False, False]
    assert fig.layout.xaxis.type == "log" and list(fig.data[1].y) == [0.5, 0.1]
    assert fig.layout.font.size == Theme(presentation=True).sizes.base >= 18


def test_encoding_heatmap_curves_and_similarity():
    table = np.array([[0.0, 1.0], [1.0, 0.0], [0.0, -1.0]])
    heat = encoding_heatmap(table, title="PE")
    assert heat.layout.title.text == "PE — shape (3, 2)" and heat.layout.coloraxis.cmid == 0
    np.testing.assert_array_equal(heat.data[0].z, table)
    # sines and cosines apart: the even dimensions left, the odd ones right, each with its true index
    halves = encoding_heatmap(np.arange(12.0).reshape(2, 6), split_pairs=True)
    left, right = halves.data
    assert list(left.x) == [0, 2, 4] and list(right.x) == [1, 3, 5]
    np.testing.assert_array_equal(right.z, [[1, 3, 5], [7, 9, 11]])
    # a robust scale: clipped colours, true values on hover, the clip named on the colour bar
    clipped = encoding_heatmap(table, zmax=0.5)
    assert (clipped.layout.coloraxis.cmin, clipped.layout.coloraxis.cmax) == (-0.5, 0.5)
    assert "±0.5" in clipped.layout.coloraxis.colorbar.title.text and clipped.data[0].z.max() == 1.0
    curves = encoding_curves(table, [1, 0])
    assert [t.name for t in curves.data] == ["dim 1", "dim 0"] and list(curves.data[0].y) == [1.0, 0.0, -1.0]
    with pytest.raises(ValueError, match="outside"):
        encoding_curves(table, [2])
    sim = position_similarity(table)
    np.testing.assert_allclose(sim.data[0].z, table @ table.T)


def test_query_explained_panels_follow_the_maths():
    q = np.array([[1.0, 0.0], [0.0, 2.0]], dtype=np.float32)
    k = np.array([[1.0, 1.0], [3.0, 0.0]], dtype=np.float32)
    qe = explain_query(q, k, 0, np.zeros(2))
    fig = query_explained(qe, ["a", "b"], "a")
    heat, sums, scaled, weights = fig.data
    np.testing.assert_allclose(heat.z, [[1.0, 0.0], [3.0, 0.0]])  # q ⊙ k_j
    np.testing.assert_allclose(sums.x, [1.0, 3.0])
    np.testing.assert_allclose(scaled.x, np.array([1.0, 3.0]) / np.sqrt(2), rtol=1e-6)
    np.testing.assert_allclose(weights.x, qe.weights) and np.testing.assert_allclose(sum(weights.x), 1.0, rtol=1e-6)
    assert "“a”" in fig.layout.title.text


def test_qk_scatter_two_clouds_coloured_by_position():
    cq, ck = np.array([[0.0, 0.0], [1.0, 1.0]]), np.array([[2.0, 0.0], [0.0, 2.0]])
    fig = qk_scatter(cq, ck, ["a", "b"], np.array([0.75, 0.25]))
    queries, keys = fig.data
    assert (queries.name, keys.name) == ("queries", "keys")
    assert queries.marker.symbol == "circle" and keys.marker.symbol == "diamond"
    assert list(keys.x) == [2.0, 0.0] and list(queries.marker.color) == [0, 1]
    assert fig.layout.xaxis.title.text == "PC1 (75% of variance)"
    assert [a.text for a in fig.layout.annotations] == ["query: a", "query: b", "key: a", "key: b"]


def test_qk_scatter_labels_of_coinciding_points_do_not_overlap():
    """A query drawn on top of its key: the two labels go to different places, neither covering a point."""
    cq = np.array([[0.0, 0.0], [3.0, 1.0], [-2.0, 2.0]])
    ck = np.array([[0.02, 0.01], [-1.0, -3.0], [2.0, -2.0]])
    fig = qk_scatter(cq, ck, ["because", "it", "tired"], np.array([0.5, 0.2]), labelled=[0], labelled_keys=[0, 1])
    notes = {a.text: (a.ax, a.ay) for a in fig.layout.annotations}
    assert set(notes) == {"query: because", "key: because", "key: it"}
    theme = Theme()
    points = np.array([cq[0], ck[0]])
    offsets = label_offsets(points, ["query: because", "key: because"], np.concatenate([cq, ck]), theme)
    assert offsets == [notes["query: because"], notes["key: because"]]
    # the label boxes (centred on the offsets; width ~0.6 em per character) are apart
    (ax1, ay1), (ax2, ay2) = offsets
    assert abs(ay1 - ay2) > 1.3 * theme.sizes.tick or abs(ax1 - ax2) > 0.6 * theme.sizes.tick * 14
