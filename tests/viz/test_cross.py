"""The cross-attention caption states what the drawn weights say."""

from __future__ import annotations

import numpy as np

from viz.views.cross import NAMED, alignment_caption


def test_the_caption_names_each_rows_strongest_source_token_and_counts_the_look_ahead():
    queries = ["[BOS]", "1", "9", "9", "4"]  # the decoder's input: it writes 1, 9, 9, 4, then the end
    keys = ["[BOS]", "0", "7", "m", "a", "r", "1", "9", "9", "4"]
    w = np.full((5, 10), 0.01, dtype=np.float32)
    for row, key in enumerate([6, 7, 8, 9, 0]):  # each row reads the character it writes next
        w[row, key] = 0.91
    w[2, 8], w[2, 7] = 0.01, 0.91  # row 2 writes the second 9 but reads the first: still the token "9"
    text = alignment_caption(w / w.sum(-1, keepdims=True), queries, keys)
    assert "over the source's 10 tokens" in text
    assert "“[BOS]”→“1” 0.91" in text and "“4”→“[BOS]” 0.91" in text
    assert "4 of 4 rows look most at the source token the target writes next" in text
    shifted = alignment_caption(np.roll(w, 3, axis=1), queries, keys)  # every row three source tokens later
    assert "0 of 4 rows" in shifted


def test_a_long_target_names_its_first_rows_only():
    n = NAMED + 5
    text = alignment_caption(np.eye(n, dtype=np.float32), [f"t{i}" for i in range(n)], [f"s{i}" for i in range(n)])
    assert "… (5 more)" in text and text.count("→") == NAMED
