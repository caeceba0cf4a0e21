"""The cross-attention caption states what the drawn weights say."""

from __future__ import annotations

import numpy as np
import pytest

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


def test_the_command_line_opens_either_stack_of_a_t5_folder(tmp_path):
    from pathlib import Path

    from viz.export.cli import main

    folder = Path(__file__).resolve().parents[1] / "fixtures" / "hf_encdec" / "t5"
    out = tmp_path / "cross.html"
    source = "The animal didn't cross the street."
    argv = ["--model", str(folder), "--source", source, "--text", "The animal was tired.", "--view", "cross"]
    assert main([*argv, "--format", "html", "--out", str(out)]) == 0
    html = out.read_text(encoding="utf-8")
    assert "cross-attention, target on source" in html and "animal" in html
    assert main(["--model", str(folder), "--stack", "encoder", "--text", source, "--view", "cross",
                 "--format", "html", "--out", str(tmp_path / "no.html")]) != 0  # fmt: skip  # the encoder reads none


def test_cross_metrics_measure_a_known_alignment():
    from model.analysis.cross import cross_metrics

    targets, sources = ["<s>", "a", "b", "c"], ["a", "b", "c", "</s>"]
    aligned = np.full((4, 4), 0.02)
    for row, key in enumerate([0, 1, 2, 3]):  # each target token reads the source token it writes next
        aligned[row, key] = 0.94
    even = np.full((4, 4), 0.25)
    reverse = aligned[:, ::-1]
    m = cross_metrics(np.stack([aligned, even, reverse])[None], targets, sources)  # (1, 3)
    assert np.allclose(m["focus"][0], [0.94, 0.25, 0.94])
    assert m["spread"][0, 1] == pytest.approx(1.0) and m["spread"][0, 0] < 0.25
    assert np.allclose(m["writes next"][0], [1.0, 1 / 3, 0.0])  # the even head's argmax is the first key: "a"
    assert m["monotone"][0, 0] == pytest.approx(1.0) and m["monotone"][0, 2] == pytest.approx(-1.0)
    assert np.isnan(m["monotone"][0, 1])  # every row picks the same key: no order to measure


def test_find_heads_ranks_cross_attention_on_picked_source_tokens():
    from model.analysis.find import find_heads

    cross = np.full((1, 2, 3, 5), 0.2)  # (L, H, N, S)
    cross[0, 1, 2] = [0.0, 0.0, 0.0, 0.9, 0.1]  # head 1: target token 2 reads source token 3
    pairs = np.zeros((3, 5), dtype=bool)
    pairs[2, 3] = True
    found = find_heads(cross, pairs, np.zeros(3, dtype=bool))
    assert found.ranking()[0] == (0, 1) and found.score[0, 1] == pytest.approx(0.9)
    assert found.chance == pytest.approx(0.2) and found.column is not None  # the other targets' weight on it
    assert found.column[0, 1] == pytest.approx(0.2)
