import numpy as np
import plotly.graph_objects as go
import pytest

from viz.figures import (
    Theme,
    attention_heatmap,
    difference_heatmap,
    head_view,
    heads_grid,
    matrix_heatmap,
    metric_spread,
    model_overview,
    similarity_matrix,
    weights_vs_contributions,
)
from viz.figures.common import ZW, downsample, plotly_config, thinned, token_labels, unique_labels
from viz.figures.grids import GRID_MAX
from viz.figures.overview import tile_thumbnails

TOKENS = ["[CLS]", "the", "cat", "sat", "on", "the", "mat", "[SEP]"]


def uniform(n):
    return np.full((n, n), 1.0 / n, dtype=np.float32)


def test_heatmap_shape_labels_hover_and_title():
    w = np.random.default_rng(0).random((8, 8)).astype(np.float32)
    fig = attention_heatmap(w, TOKENS, title="L0 H1")
    trace = fig.data[0]
    assert trace.z.shape == (8, 8)
    assert list(trace.y) == token_labels(TOKENS)
    assert trace.y[1] == "the·1" and trace.y[5] == "the·5"  # a repeated word carries its position
    assert trace.y[2] == "cat"  # a word that occurs once does not
    assert "query: %{y}" in trace.hovertemplate and "%{z:.5f}" in trace.hovertemplate
    assert fig.layout.title.text == "L0 H1"
    assert fig.layout.yaxis.autorange == "reversed"
    assert trace.zmin == 0 and trace.zmax == pytest.approx(w.max())


def test_click_targets_are_svg_markers_up_to_svg_max_cells_and_webgl_beyond():
    from viz.figures.cells import SVG_MAX, add_cell_targets

    w = np.random.default_rng(0).random((8, 8)).astype(np.float32)
    ids = np.stack(np.meshgrid(np.arange(8), np.arange(8), indexing="ij"), axis=-1)  # (8, 8, 2): (query, key)
    fig = attention_heatmap(w, TOKENS, theme=Theme(interactive=True), cell_ids=ids)
    cells = [t for t in fig.data if t.name == "cells"]
    assert [t.type for t in cells] == ["scatter"] and len(cells[0].x) == 64  # no WebGL canvas for 64 cells
    assert fig.data[0].hoverinfo == "skip" and fig.layout.clickmode == "event+select"
    assert cells[0].customdata[8 * 3 + 5][:2] == [3, 5] and cells[0].customdata[8 * 3 + 5][2] == pytest.approx(
        w[3, 5], abs=1e-5
    )
    n = int(np.ceil(np.sqrt(SVG_MAX + 1)))  # a grid above SVG_MAX cells (a large model's layers × heads)
    big = go.Figure(go.Heatmap(z=np.zeros((n, n))))
    labels = [str(i) for i in range(n)]
    add_cell_targets(big, labels, labels, np.zeros((n, n)), np.zeros((n, n, 2), dtype=int), "weight")
    assert big.data[-1].type == "scattergl" and len(big.data[-1].x) == n * n


def test_scores_mode_marks_masked_cells():
    s = np.random.default_rng(1).normal(size=(4, 4)).astype(np.float32)
    s[np.triu_indices(4, 1)] = -np.inf
    fig = attention_heatmap(s, TOKENS[:4], mode="scores")
    main, overlay = fig.data
    assert np.isnan(main.z[0, 3]) and not np.isnan(main.z[3, 0])
    assert overlay.name == "masked" and overlay.z[0, 3] == 1 and np.isnan(overlay.z[3, 0])
    assert "masked" in overlay.hovertemplate
    assert main.zmin == -main.zmax  # symmetric diverging scale


def test_bad_shapes_raise_clear_errors():
    with pytest.raises(ValueError, match="2 dimensions"):
        attention_heatmap(np.zeros((2, 2, 2)), ["a", "b"])
    with pytest.raises(ValueError, match="3 labels but the array has 2"):
        attention_heatmap(np.zeros((2, 2)), ["a", "b", "c"])
    with pytest.raises(ValueError, match="shapes"):
        difference_heatmap(np.zeros((2, 2)), np.zeros((3, 3)), ["a", "b"])
    with pytest.raises(ValueError, match="mode"):
        attention_heatmap(np.zeros((2, 2)), ["a", "b"], mode="logits")


def test_hostile_token_text_is_escaped():
    fig = attention_heatmap(uniform(2), ["<script>alert(1)</script>", "&"], title="<b>x</b>")
    assert fig.data[0].y[0] == "&lt;script&gt;alert(1)&lt;/script&gt;"
    assert fig.data[0].y[1] == "&amp;"
    assert fig.layout.title.text == "&lt;b&gt;x&lt;/b&gt;"


def test_heads_grid_shares_one_colour_scale():
    w = np.stack([uniform(8), np.eye(8, dtype=np.float32)])
    fig = heads_grid(w, TOKENS, head_labels=["uniform", "self"])
    assert len(fig.data) == 1  # one tiled trace: one colour scale by construction
    z = np.asarray(fig.data[0].z, dtype=float)
    gap = z.shape[0] - 8  # empty rows above the blocks hold the head labels
    assert gap >= 1 and z.shape[1] == 18  # two 8x8 blocks side by side with a gutter after each
    assert np.isnan(z[:gap]).all() and np.isnan(z[:, 8]).all()
    np.testing.assert_allclose(z[gap:, :8], uniform(8))
    np.testing.assert_allclose(z[gap:, 9:17], np.eye(8))
    assert fig.data[0].zmax == pytest.approx(1.0)
    assert [a.text for a in fig.layout.annotations] == ["uniform", "self"]
    assert all(a.y == fig.data[0].y[gap // 2] for a in fig.layout.annotations)  # labels sit in the empty band
    assert fig.data[0].y[gap + 1].startswith("the") and fig.data[0].x[10].startswith("the")  # hover names tokens
    assert len(set(fig.data[0].x)) == len(fig.data[0].x)  # blocks stay distinct categories


def test_difference_is_a_minus_b():
    a, b = np.eye(8, dtype=np.float32), uniform(8)
    fig = difference_heatmap(a, b, TOKENS)
    np.testing.assert_allclose(fig.data[0].z, a - b)
    assert "A − B" in fig.data[0].hovertemplate


def test_head_view_lines_follow_weights_and_threshold():
    prev = np.eye(8, k=-1, dtype=np.float32)
    prev[0, 0] = 1.0
    fig = head_view(prev[None], TOKENS, threshold=0.5)
    lines = [t for t in fig.data if t.mode == "lines"]
    assert len(lines) == 1  # one opacity bucket: all weights are 1
    ys = np.array(lines[0].y, dtype=float).reshape(-1, 3)[:, :2]
    assert len(ys) == 8  # one line per query row
    assert {(int(-a), int(-b)) for a, b in ys} == {(0, 0)} | {(i, i - 1) for i in range(1, 8)}
    labels = [t for t in fig.data if t.mode == "markers+text"]
    assert len(labels) == 2 and list(labels[0].text) == token_labels(TOKENS)
    faint = head_view(uniform(8)[None], TOKENS, threshold=0.5)
    assert not [t for t in faint.data if t.mode == "lines"]  # 1/8 < threshold: nothing drawn


def test_head_view_multiple_heads_get_distinct_colours():
    w = np.stack([np.eye(8, dtype=np.float32), np.eye(8, k=-1, dtype=np.float32)])
    fig = head_view(w, TOKENS, head_labels=["h0", "h1"], threshold=0.1)
    colours = {t.line.color for t in fig.data if t.mode == "lines"}
    assert len(colours) == 2
    assert {t.name for t in fig.data if t.mode == "lines" and t.showlegend} == {"h0", "h1"}


def test_overview_is_downsampled_one_trace():
    p = np.random.default_rng(2).random((6, 12, 512, 512)).astype(np.float32)
    fig = model_overview(p, selected=(1, 2))
    heat, centres = fig.data
    assert heat.z.shape == (6 * 33, 12 * 33)  # 32x32 thumbnails with a 1-cell gutter
    assert len(centres.x) == 72
    assert list(centres.customdata[13]) == [1, 1]
    assert len(fig.layout.shapes) == 1
    assert len(fig.to_json()) < 2_000_000
    # the axes end at the thumbnails' edges: no band the click markers' autorange padding would leave blank
    assert list(fig.layout.yaxis.range) == [6 * 33 - 1.5, -0.5]
    assert list(fig.layout.xaxis.range) == [-0.5, 12 * 33 - 1.5]


def test_downsample_and_tiles_keep_structure():
    eye = np.eye(64, dtype=np.float32)
    small = downsample(eye, 16)
    assert small.shape == (16, 16)
    np.testing.assert_allclose(small, np.eye(16) * 0.25)  # each 4x4 block holds 4 ones of 16 cells
    mosaic, t = tile_thumbnails(eye[None, None])
    assert t == 32 and np.nanmax(mosaic) == 1.0


def test_a_cross_attention_thumbnail_keeps_its_shape_in_a_square_slot():
    p = np.zeros((2, 3, 11, 10), dtype=np.float32)  # 11 target tokens on 10 source tokens
    p[..., np.arange(10), np.arange(10)] = 1.0
    mosaic, t = tile_thumbnails(p)
    assert t == 11 and mosaic.shape == (2 * 12, 3 * 12)
    slot = mosaic[12:23, 24:35].astype(np.float32)  # layer 1, head 2
    assert np.isnan(slot[:, 10]).all() and not np.isnan(slot[:, :10]).any()  # the missing key column is empty
    np.testing.assert_array_equal(slot[:10, :10], np.eye(10))


def test_similarity_matrix_shows_heads_in_the_given_order():
    d = np.array([[0, 0.9, 0.1, 0.9], [0.9, 0, 0.9, 0.1], [0.1, 0.9, 0, 0.9], [0.9, 0.1, 0.9, 0]])
    fig = similarity_matrix(d, ["a", "b", "c", "d"], order=[0, 2, 1, 3])
    assert list(fig.data[0].x) == ["a", "c", "b", "d"] == list(fig.data[0].y)
    np.testing.assert_allclose(fig.data[0].z, d[np.ix_([0, 2, 1, 3], [0, 2, 1, 3])])
    assert list(similarity_matrix(d, list("abcd")).data[0].x) == list("abcd")  # default: as given
    with pytest.raises(ValueError):
        similarity_matrix(d, ["a"])
    with pytest.raises(ValueError, match="permutation"):
        similarity_matrix(d, list("abcd"), order=[0, 0, 1, 2])


def test_metric_spread_and_theme():
    fig = metric_spread({"trained": [0.1, 0.9], "random": [0.2, 0.2]}, "previous", theme=Theme(presentation=True))
    assert [t.name for t in fig.data] == ["trained", "random"]
    assert fig.layout.font.size == Theme(presentation=True).sizes.base >= 18
    dark = attention_heatmap(uniform(2), ["a", "b"], theme=Theme(dark=True, colorscale="Cividis"))
    assert dark.layout.paper_bgcolor == "#111418" and dark.layout.font.color == "#f8f9fa"
    assert dark.layout.title.font.color == dark.layout.xaxis.tickfont.color == "#f8f9fa"  # readable on black
    assert dark.data[0].colorscale[0][1] != attention_heatmap(uniform(2), ["a", "b"]).data[0].colorscale[0][1]


def test_plotly_config_names_the_file_and_can_export_a_slide():
    cfg = plotly_config("MiniLM attention L1 H2")
    assert cfg["toImageButtonOptions"] == {"format": "png", "filename": "MiniLM-attention-L1-H2", "scale": 3}
    slide = plotly_config("x", size="slide")["toImageButtonOptions"]
    assert (slide["width"], slide["height"], slide["scale"]) == (1920, 1080, 1)


def test_token_labels_positions_option_and_uniqueness():
    toks = ["it", "was", "it", "<b>"]
    assert token_labels(toks) == ["it·0", "was", "it·2", "&lt;b&gt;"]
    assert token_labels(toks, "all") == ["it·0", "was·1", "it·2", "&lt;b&gt;·3"]
    assert token_labels(toks, "none") == ["it", "was", "it" + ZW, "&lt;b&gt;"] == unique_labels(toks)
    assert len(set(token_labels(["a·1", "a", "a"]))) == 3  # a typed "a·1" cannot collide with a position label


def test_dense_axes_are_thinned_evenly_keeping_both_ends():
    labels = [f"t{i}" for i in range(512)]
    axis = thinned(labels, 40)
    assert len(axis["tickvals"]) == 40 and axis["tickvals"][0] == "t0" and axis["tickvals"][-1] == "t511"
    gaps = np.diff([labels.index(v) for v in axis["tickvals"]])
    assert gaps.max() - gaps.min() <= 1
    assert thinned(labels[:10], 40)["tickvals"] == labels[:10]
    fig = attention_heatmap(np.full((512, 512), 1 / 512, dtype=np.float32), labels)
    assert 10 <= len(fig.layout.yaxis.tickvals) <= 60 and len(fig.data[0].y) == 512  # hover keeps every row


def test_heads_grid_block_averages_long_inputs():
    w = np.random.default_rng(3).dirichlet(np.ones(512), (12, 512)).astype(np.float32)
    fig = heads_grid(w, [f"t{i}" for i in range(512)], title="L0")
    z = np.asarray(fig.data[0].z)
    gap = z.shape[0] // 3 - GRID_MAX
    assert gap >= 1 and z.shape == (3 * (GRID_MAX + gap), 4 * (GRID_MAX + 1))
    assert "block-averaged" in fig.layout.title.text and "mean weight" in fig.data[0].hovertemplate
    block = np.asarray(fig.data[0].z, dtype=float)[gap : gap + GRID_MAX, :GRID_MAX]
    np.testing.assert_allclose(block.sum(-1).mean(), GRID_MAX / 512, rtol=1e-3)  # block means
    assert len(fig.to_json()) < 2_000_000


def test_matrix_heatmap_shape_in_title_masked_cells_and_dimension_labels():
    m = np.arange(12, dtype=np.float32).reshape(3, 4) - 6
    m[0, 3] = -np.inf
    fig = matrix_heatmap(m, ["a", "b", "c"], title="Q")
    main, masked = fig.data
    assert fig.layout.title.text == "Q — shape (3, 4)"
    assert list(main.x) == ["d0", "d1", "d2", "d3"] and list(main.y) == ["a", "b", "c"]
    assert np.isnan(main.z[0, 3]) and masked.z[0, 3] == 1 and np.isnan(masked.z[1, 1])
    assert main.zmin == -main.zmax == -6  # diverging, symmetric around 0 from the largest finite |value|
    seq = matrix_heatmap(np.ones((2, 2)), ["a", "b"], col_labels=["x", "y"], diverging=False, zmax=2.0)
    assert seq.data[0].zmin == 0 and seq.data[0].zmax == 2.0 and list(seq.data[0].x) == ["x", "y"]


def test_weights_vs_contributions_normalises_each_row_of_the_contributions():
    pattern = np.array([[0.5, 0.5], [1.0, 0.0]], dtype=np.float32)
    contrib = np.array([[0.5, 0.0], [2.0, 0.0]], dtype=np.float32)
    fig = weights_vs_contributions(pattern, contrib, ["a", "b"], title="t")
    left, right = fig.data
    np.testing.assert_allclose(left.z, pattern)
    np.testing.assert_allclose(right.z, [[1.0, 0.0], [1.0, 0.0]])  # row shares
    assert left.coloraxis == right.coloraxis == "coloraxis"  # one colour scale for both
    assert fig.layout.coloraxis.cmax == pytest.approx(1.0)


def test_percentages_never_round_to_all_or_nothing():
    from viz.figures.text import pct

    assert pct(0.998) == "99.8%" and pct(0.99996) == "99.996%" and pct(1.0) == "100%"
    assert pct(0.5) == "50%" and pct(0.0) == "0%" and pct(0.003) == "0.3%" and pct(0.0001) == "<0.1%"
