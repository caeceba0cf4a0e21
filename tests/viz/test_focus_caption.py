"""The attention map's caption is computed from the matrix it draws, focus or none."""

from __future__ import annotations

import numpy as np

from model.io.catalog import ModelSpec
from viz.figures import Theme
from viz.figures.text import pct
from viz.views import build
from viz.views.captions import quoted_at
from viz.views.focus import focus_caption
from viz.views.source import DirectSource

TOKENS = ["a", "cat", "sat", "it"]
W = np.array([[1, 0, 0, 0], [0.5, 0.5, 0, 0], [0.2, 0.3, 0.5, 0], [0.1, 0.68, 0.02, 0.2]])


def test_focus_query_and_key_name_the_weight_and_its_rank():
    text = focus_caption(TOKENS, W, 3, 1, 3, 1)
    assert text.startswith("L3H1 gives 68% of “it”'s attention to “cat” (its strongest key)")
    assert "strongest keys “cat” (68%), “it” (20%), “a” (10%)" in text
    assert "(rank 3 of the 4 keys it weighs)" in focus_caption(TOKENS, W, 3, 0, 3, 1)


def test_a_causal_rows_strongest_keys_are_only_those_it_sees():
    """Row 1 sees "a" and "cat" only: the caption named "sat" (0%) among its strongest keys, and ranked a hidden key
    among all four."""
    assert focus_caption(TOKENS, W, 1, -1, 0, 0) == "L0H0: “cat” looks most at “a” (50%), “cat” (50%)."
    hidden = focus_caption(TOKENS, W, 1, 3, 0, 0)
    assert "gives 0% of “cat”'s attention to “it” (none: a key it does not weigh)" in hidden
    assert "“sat”" not in hidden and "“it” (0%)" not in hidden


def test_without_focus_the_strongest_cell_and_the_most_attended_key():
    text = focus_caption(TOKENS, W, -1, -1, 0, 0)
    assert "strongest weight is “a” → “a” (100%)" in text
    assert f"{pct(W.mean(0).max())} of its attention to “a”" in text


def test_scores_caption_reads_masked_cells_as_absent():
    scores = np.log(np.where(W > 0, W, 0.0) + 1e-9)
    scores[0, 1:] = -np.inf
    text = focus_caption(TOKENS, scores, 0, -1, 0, 0, mode="scores")
    assert "scores highest on “a”" in text
    assert "−inf" not in text and "inf" not in text


def test_the_view_caption_follows_the_drawn_pattern():
    src = DirectSource.for_text(ModelSpec("bundled"), "The cat sat on the mat.")
    (view,) = build("attention", src, Theme(), layer=1, head=2, query=5, key=2)
    row = src.obs.patterns[1, 2, 5]
    tokens = src.obs.tokens
    assert tokens.count(tokens[5]) == 2 and tokens.count(tokens[2]) == 1  # the second “the”, the only “cat”
    assert view.caption.startswith(f"L1H2 gives {pct(row[2])} of “{tokens[5]}”·5's attention to “{tokens[2]}”")


def test_a_caption_names_which_of_two_equal_tokens_it_means():
    """Axes label a repeated token with its position ("the·5"); captions say “the”·5 where a bare “the” would
    not tell the two apart, and nothing where the token is the only one (with or without the leading space)."""
    tokens = ["[CLS]", "the", "cat", " at", "the", "at", "[SEP]"]
    assert [quoted_at(tokens, i) for i in (1, 2, 3, 4, 5, -1)] == [
        "“the”·1", "“cat”", "“at”·3", "“the”·4", "“at”·5", "“[SEP]”"
    ]  # fmt: skip
    w = np.zeros((7, 7))
    w[:, 1], w[:, 4] = 0.6, 0.4
    text = focus_caption(tokens, w, 2, -1, 0, 0)
    assert "“cat” looks most at “the”·1 (60%), “the”·4 (40%)" in text


def test_with_scaling_off_a_soft_capped_model_still_caps_and_the_caption_says_so():
    """Gemma 2 with "Divide scores by √d_k" off: the panel drawn is capped at ±0.25, the caption said the scores
    "keep their range [-0.6, 0.6]"."""
    from model.observe import Options
    from tests.hf_fixtures import FIXTURES

    spec = ModelSpec("folder", path=str(FIXTURES / "gemma2"))
    src = DirectSource.for_text(spec, "The cat sat on the mat because it was tired.", Options(scale=False))
    (view,) = build("qkv.scores", src, Theme(), layer=0, head=0)
    capped = np.array(view.figure.data[1].z, dtype=float)
    assert np.nanmax(np.abs(capped)) <= 0.25
    expected = f"to [{np.nanmin(capped):.2f}, {np.nanmax(capped):.2f}]"
    assert view.caption.startswith("Scaling is off, but capping at ±0.25 still takes the scores from")
    assert expected in view.caption


def test_with_special_tokens_hidden_repeated_tokens_keep_their_text_positions():
    """Hiding [CLS] must not renumber the text: the map labels and names the second “the” ·5, as Q / K / V, the
    URL's query=5 and every other page do (it read ·4 on the map and ·5 everywhere else)."""
    src = DirectSource.for_text(ModelSpec("bundled"), "The cat sat on the mat.", hide_special=True)
    assert src.obs.tokens[5] == "the" and src.obs.special[0]
    (view,) = build("attention", src, Theme(), layer=1, head=2, query=5, key=2)
    assert "“the”·5's attention" in view.caption
    ticks = list(view.figure.layout.yaxis.ticktext)
    assert "the·1" in ticks and "the·5" in ticks and "[CLS]" not in ticks
    (qkv,) = build("qkv.scores", src, Theme(), query=5)
    assert "query “the”·5" in qkv.caption
