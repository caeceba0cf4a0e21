"""Kinds of heads on hand-built patterns with known answers; the scores are the numbers other pages show."""

from __future__ import annotations

import numpy as np

from model.analysis.kinds import KINDS, head_kinds, normalised_entropy, pair_label
from model.analysis.metrics import head_metrics

TOKENS = ["[CLS]", "the", "cat", "sat", "on", "the", "mat", ".", "[SEP]"]
SPECIAL = np.array([t.startswith("[") for t in TOKENS])


def patterns() -> np.ndarray:
    n = len(TOKENS)
    prev = np.eye(n, k=-1, dtype=np.float32)
    prev[0, 0] = 1.0
    nxt = np.eye(n, k=1, dtype=np.float32)
    nxt[-1, -1] = 1.0
    sink = np.zeros((n, n), dtype=np.float32)
    sink[:, 0] = 0.9
    sink[:, 1] = 0.1
    uniform = np.full((n, n), 1 / n, dtype=np.float32)
    repeat = np.full((n, n), 0.02, dtype=np.float32)
    repeat[5, 1], repeat[1, 5] = 0.84, 0.84  # "the" looks at the other "the"
    repeat /= repeat.sum(-1, keepdims=True)
    return np.stack([prev, nxt, sink, uniform, repeat])[None]  # (1, 5, N, N)


def test_each_hand_built_head_gets_its_kind():
    p = patterns()
    kinds = head_kinds(p, TOKENS, SPECIAL)
    assert kinds.kind.tolist() == [["previous token", "next token", "sink", "broad", "repeated token"]]
    assert kinds.sink_target[0, 2] == "[CLS]"
    assert "parked on [CLS]" in kinds.sentence("sink", 0, 2)
    metrics = head_metrics(p, special=SPECIAL)  # the same numbers as Head metrics
    np.testing.assert_allclose(kinds.scores["previous token"], metrics["previous"])
    assert kinds.counts() == {
        **{k: 0 for k in KINDS},
        "previous token": 1,
        "next token": 1,
        "sink": 1,
        "broad": 1,
        "repeated token": 1,
        "mixed": 0,
        "not computable": 0,
    }
    assert kinds.specialised == 4 and kinds.heads("previous token") == [(0, 0)]
    # the repeated-token head is found by Find heads' "same token" relation: both "the"s look at each other
    assert kinds.scores["repeated token"][0, 4] > 0.8


def test_a_text_without_repeats_has_no_repeated_token_kind():
    tokens = ["a", "b", "c", "d"]
    p = np.full((1, 1, 4, 4), 0.25, dtype=np.float32)
    kinds = head_kinds(p, tokens, np.zeros(4, dtype=bool))
    assert "repeated token" not in kinds.scores and kinds.heads("repeated token") == []
    assert kinds.kind[0, 0] == "broad"


def test_normalised_entropy_follows_the_mask():
    n = 6
    causal = np.tril(np.ones((n, n), dtype=np.float32))
    causal /= causal.sum(-1, keepdims=True)  # uniform over the keys each query may see
    np.testing.assert_allclose(normalised_entropy(causal[None, None]), 1.0, rtol=1e-6)
    one_hot = np.eye(n, dtype=np.float32)[None, None]
    np.testing.assert_allclose(normalised_entropy(one_hot), 0.0, atol=1e-6)


def test_normalised_entropy_of_a_sliding_window_layer_is_over_its_own_window():
    """Gemma's local layers see 512 keys where its global layers see every one: a head spreading evenly over its
    window is as broad as one spreading over every key (each layer's rows over the keys that layer lets them see,
    not the most any layer sees)."""
    n, window = 10, 3
    i, j = np.indices((n, n))
    local = ((j <= i) & (j > i - window)).astype(np.float32)
    full = (j <= i).astype(np.float32)
    p = np.stack([local, full])[:, None]  # (L=2, H=1, N, N)
    p /= p.sum(-1, keepdims=True)  # uniform over what each layer's query sees
    np.testing.assert_allclose(normalised_entropy(p), 1.0, rtol=1e-6)


def test_normalised_entropy_from_the_metrics_rows_equals_its_own_pass():
    """The kinds read the row entropies the metrics' pass kept (no second pass over every cell): same numbers."""
    from model.analysis.metrics import head_metrics

    rng = np.random.default_rng(0)
    p = np.tril(rng.random((3, 4, 9, 9)).astype(np.float32) ** 4)
    p[1, 2] = np.eye(9, dtype=np.float32)  # one head on itself only: entropy 0
    p /= p.sum(-1, keepdims=True)
    rows: dict = {}
    metrics = head_metrics(p, rows_out=rows)
    assert rows["entropy"].shape == rows["visible"].shape == (3, 4, 9)
    np.testing.assert_allclose(normalised_entropy(p, rows), normalised_entropy(p), atol=1e-6)
    assert normalised_entropy(p, rows)[1, 2] == 0.0
    a = head_kinds(p, [f"t{i}" for i in range(9)], np.zeros(9, dtype=bool), causal=True)
    b = head_kinds(p, [f"t{i}" for i in range(9)], np.zeros(9, dtype=bool), causal=True, metrics=metrics, rows=rows)
    np.testing.assert_array_equal(a.kind, b.kind)
    np.testing.assert_allclose(a.scores["broad"], b.scores["broad"], atol=1e-6)


def test_a_head_linking_the_focus_pair_gets_its_own_kind_unless_it_is_a_column():
    n = len(TOKENS)
    link = np.full((n, n), 0.05, dtype=np.float32)
    link[6, 2] = 0.7  # "mat" → "cat": only this query looks there
    link /= link.sum(-1, keepdims=True)
    column = np.full((n, n), 0.05, dtype=np.float32)
    column[:, 2] = 0.7  # every token looks at "cat": not about the query
    column /= column.sum(-1, keepdims=True)
    p = np.stack([link, column])[None]
    kinds = head_kinds(p, TOKENS, SPECIAL, pair=(6, 2))
    assert kinds.pair == "“mat” → “cat”"
    assert kinds.kind[0, 0] == "your pair" and kinds.kind[0, 1] != "your pair"
    assert kinds.scores["your pair"][0, 1] == 0  # a column pattern does not count
    assert kinds.sentence("your pair", 0, 0).startswith("links “mat” → “cat” with 0.")
    assert "your pair" not in head_kinds(p, TOKENS, SPECIAL).scores


def test_the_focus_pair_says_which_of_two_equal_tokens_it_links():
    tokens = ["[CLS]", "the", "cat", "saw", " the", "dog", "[SEP]"]
    assert pair_label(tokens, (4, 2)) == "“the”·4 → “cat”"
    assert pair_label(tokens, (5, 1)) == "“dog” → “the”·1"
