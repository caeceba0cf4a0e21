"""The views of a text read whole (model/long.py) draw what the full patterns hold: block means and maxima over every
token, exact windows, the focus row in the caption, every head of a layer, the overview, the gallery and the head
metrics — checked against the in-memory observation of the same 800 tokens."""

from __future__ import annotations

import numpy as np
import pytest

from model.analysis.kinds import observed_kinds
from model.io.catalog import ModelSpec
from model.long import LONG_FROM
from model.observe import Options, observe
from viz.figures import Theme
from viz.views import ViewUnavailableError, build
from viz.views.source import DirectSource

TEXT = " ".join(["The cat sat on the mat because it was tired, and the dog watched it."] * 50)


@pytest.fixture(scope="module")
def src():
    return DirectSource.for_text(ModelSpec("bundled"), TEXT, whole=True)


@pytest.fixture(scope="module")
def full(src):
    """Every pattern of the same tokens in memory (what the long path must reproduce)."""
    n = src.long.n_tokens
    return observe(src.loaded.model, src.loaded.tokenizer, TEXT, Options(max_len=n))


def z(view) -> np.ndarray:
    return np.array(view.figure.data[0].z, dtype=np.float64)


@pytest.mark.slow
def test_the_source_keeps_512_tokens_of_patterns_and_reads_the_rest_whole(src, full):
    assert src.obs.n_tokens == LONG_FROM and src.obs.truncated
    assert src.long.n_tokens == full.n_tokens > 700 and src.long.tokens == full.tokens


@pytest.mark.slow
def test_the_whole_text_as_block_means_or_maxima(src, full):
    long = src.long
    (mean,) = build("attention", src, Theme(), layer=1, head=2)
    assert "all" in mean.figure.layout.title.text and "block means" in mean.figure.layout.title.text
    edges, pattern = long.edges(), full.patterns[1, 2]
    drawn = z(mean)
    for a, b in ((0, 0), (10, 3), (20, 19)):
        assert abs(drawn[a, b] - pattern[edges[a] : edges[a + 1], edges[b] : edges[b + 1]].mean()) < 1e-6
    (peak,) = build("attention", src, Theme(), layer=1, head=2, cells="max")
    assert abs(z(peak)[10, 3] - pattern[edges[10] : edges[11], edges[3] : edges[4]].max()) < 1e-6
    assert peak.name != mean.name
    received = full.patterns[1, 2].sum(0)
    most = int(np.argmax(received))
    assert f"({most})" in mean.caption or f"({most:,})" in mean.caption  # the most-attended key, named


def test_a_window_is_exact_and_the_focus_row_is_named(src, full):
    (view,) = build("attention", src, Theme(), layer=0, head=1, span=(600, 640, 580, 650), query=620)
    np.testing.assert_allclose(z(view), full.patterns[0, 1, 600:640, 580:650], atol=1e-6)
    row = full.patterns[0, 1, 620]
    best = int(np.argmax(row))
    assert f"“{full.tokens[best]}” ({best:,}) {round(100 * row[best])}%" in view.caption.replace(".0%", "%")
    (scores,) = build("attention", src, Theme(), layer=0, head=1, mode="scores", span=(600, 640, 580, 650))
    want = full.score_matrix(0, 1)[600:640, 580:650]
    np.testing.assert_allclose(z(scores), want, atol=1e-4)
    with pytest.raises(ViewUnavailableError, match="window"):
        build("attention", src, Theme(), layer=0, head=1, mode="scores")


def test_every_head_of_a_layer_the_mean_and_the_overview(src, full):
    long = src.long
    (mean,) = build("mean", src, Theme(), layer=2)
    edges = long.edges()
    want = full.patterns[2].mean(0)  # the bundled encoder masks nothing: a block's mean is over all its cells
    assert abs(z(mean)[4, 7] - want[edges[4] : edges[5], edges[7] : edges[8]].mean()) < 1e-6
    (heads,) = build("heads", src, Theme(), layer=2)
    assert "all" in heads.figure.layout.title.text
    (overview,) = build("overview", src, Theme())
    assert "all" in overview.figure.layout.title.text


def test_the_head_metrics_gallery_and_similarity_come_from_the_whole_text(src, full):
    metrics = src.metrics()
    for name, value in full.metrics.items():
        np.testing.assert_allclose(metrics[name], value, atol=1e-3 * max(1.0, float(np.abs(value).max())))
    long_kinds, kinds = src.kinds(), observed_kinds(full)
    assert (long_kinds.kind == kinds.kind).all()
    (gallery,) = build("heads.gallery", src, Theme())
    assert gallery.caption.startswith(f"{long_kinds.specialised} of 24 heads")
    dist, _, order = src.similarity()
    assert dist.shape == (24, 24) and np.allclose(dist, dist.T) and sorted(order) == list(range(24))


def test_the_head_view_draws_a_window_of_the_whole_text(src, full):
    (view,) = build("headview", src, Theme(), layer=1, heads=(0, 2), start=700, focus=710)
    title = view.figure.layout.title.text
    assert "tokens 700–759" in title and f"of {full.n_tokens:,}" in title
    best = int(np.argmax(full.patterns[1, 0, 710]))
    assert f"head 0: “{full.tokens[710]}·710” looks most at “{full.tokens[best]}” ({best:,}" in view.caption


@pytest.fixture(scope="module")
def decoder(tmp_path_factory):
    """A tiny LLaMA-style decoder reading 1,024 tokens, and a 1,000-character text read whole (about 780 tokens)."""
    from tests.security.gguf_files import write_tiny_gguf

    path = write_tiny_gguf(tmp_path_factory.mktemp("gguf") / "tiny.gguf", context=1024)
    text = ("the cat and the dog then there " * 40)[:1000]
    return DirectSource.for_text(ModelSpec("folder", path=str(path)), text, whole=True), text


def test_a_decoder_predicts_after_any_position_of_the_whole_text_and_continues_it(decoder):
    src, text = decoder
    from model.generate import predictions_from_hidden

    full = observe(src.loaded.model, src.loaded.tokenizer, text, Options(max_len=1024))
    assert src.long.n_tokens == full.n_tokens > 600 and src.obs.n_tokens == LONG_FROM
    at = full.n_tokens - 20  # beyond the 512 tokens whose patterns are kept
    (view,) = build("next.predictions", src, Theme(), position=at)
    want = predictions_from_hidden(src.loaded.model, full.hidden[at : at + 1], 1.0)[0]
    assert f"after position {at:,}" in view.caption
    np.testing.assert_allclose(np.array(view.figure.data[0].x), [p for _, p in want], atol=1e-5)
    (gen,) = build("next.generation", src, Theme(), n_new=3)
    assert f"·{full.n_tokens}" in " ".join(gen.figure.data[0].y)  # the first new token takes position N


def test_the_sinks_lesson_reads_the_whole_text(src, full):
    from model.analysis.decoder import sink_mass
    from model.analysis.sinks import without_keys

    grid, head = build("lesson.sinks", src, Theme(), layer=2, head=1)
    np.testing.assert_allclose(z(grid), sink_mass(full.patterns), atol=1e-5)
    assert "Over all" in grid.caption and "tokens" in head.figure.layout.title.text
    edges = src.long.edges()
    pattern = full.patterns[2, 1]
    renorm = without_keys(pattern, np.arange(pattern.shape[-1]) == 0)
    right = np.array(head.figure.data[1].z, dtype=np.float64)
    for a, b in ((0, 0), (7, 3), (12, 12)):
        want = renorm[edges[a] : edges[a + 1], edges[b] : edges[b + 1]].mean()
        assert abs(right[a, b] - want) < 1e-6


def test_the_sinks_section_reads_the_whole_text_as_the_lesson_does(src, full):
    """Beyond the weights → Sinks and head types counted the first 512 tokens' heads while the sink lesson and the
    gallery read the text whole: on Gemma 3 at 2,260 tokens 9 sink heads beside 4. Now both read every token."""
    from model.analysis.sinks import head_types, sink_shares

    shares = sink_shares(full.patterns, full.tokens, full.special, full.causal)
    for target in ("[CLS]", "[SEP]"):
        share, types = build("sinks", src, Theme(), sink=target)
        np.testing.assert_allclose(z(share), shares[target], atol=1e-5)
        assert f"all {full.n_tokens:,} tokens" in share.figure.layout.title.text
        assert share.caption.startswith(f"Over all {full.n_tokens:,} tokens, ")
    want = head_types(full.patterns, full.tokens, full.special, full.causal)
    np.testing.assert_array_equal(np.array(types.figure.data[0].customdata, dtype=object), want)
    kinds = {t: int((want == t).sum()) for t in np.unique(want)}
    assert all(f"{n} {t}" in types.caption for t, n in kinds.items()), (types.caption, kinds)
    kept = src.obs  # the first 512 tokens' patterns: what the section read before
    first = sink_shares(kept.patterns, kept.tokens, kept.special, kept.causal)["[SEP]"]
    assert not np.allclose(first, shares["[SEP]"], atol=1e-5)  # so the comparison above tells the two apart


def test_find_heads_reads_the_whole_text_as_head_metrics_does(src, full):
    """Find heads said “the same number as Head metrics' previous column” while it ranked the first 512 tokens and
    Head metrics read every token; it now reads them all, picked tokens past 512 included."""
    from model.analysis.find import find_heads, relation_pairs, token_pairs, word_ids
    from viz.figures.text import small
    from viz.views.find import found_for

    words = word_ids(full.text, full.offsets, full.special)
    for relation in ("previous", "same token", "punctuation"):
        found, _ = found_for(src, relation, (), ())
        want = find_heads(full.patterns, relation_pairs(relation, full.tokens, full.special, words), full.special)
        np.testing.assert_allclose(found.score, want.score, atol=1e-5)
        assert found.n_queries == want.n_queries > LONG_FROM
    late = [i for i, t in enumerate(full.tokens) if t == "it"][-2:]  # both past the 512 tokens kept
    queries, keys = (late[1],), (late[1] - 4,)
    (view,) = build("find", src, Theme(), relation="tokens", queries=queries, keys=keys)
    want = find_heads(full.patterns, token_pairs(full.n_tokens, queries, keys), full.special)
    found, _ = found_for(src, "tokens", queries, keys)
    np.testing.assert_allclose(found.score, want.score, atol=1e-5)
    np.testing.assert_allclose(found.column, want.column, atol=1e-5)
    assert f"all {full.n_tokens:,} tokens" in view.figure.layout.title.text
    layer, head = want.ranking()[0]
    assert f"L{layer}H{head}, with {small(want.score[layer, head])} of the weight" in view.caption


def test_a_sliding_windows_caption_says_which_queries_its_position_0_share_is_over():
    """Gemma 3's local layers read “on average a query gives 8% to position 0” over 2,732 tokens, where only the
    511 queries after it that its window lets see it count (the share is theirs)."""
    from tests.model.test_long import VARIANTS, long_and_patterns, tiny
    from viz.figures.text import pct
    from viz.views.long import head_caption

    long, patterns, _ = long_and_patterns(tiny(**VARIANTS["causal sliding window"]), 600)
    assert long.rules[0].window == 7 and not long.rules[1].window
    local, whole = head_caption(long, 0, 1, -1, -1), head_caption(long, 1, 1, -1, -1)
    share = patterns[0, 1, 1:7, 0].mean()  # queries 1–6: a 7-key window keeps position 0 from the rest
    assert f"position 0 gets {pct(share)} of a query's weight (over queries 1–6, the ones that can see it)" in local
    assert f"position 0 gets {pct(patterns[1, 1, 1:, 0].mean())} of a query's weight and" in whole
