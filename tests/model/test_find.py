"""Find heads: pairs from picked tokens or relations, heads ranked by weight on them, column heads flagged."""

from __future__ import annotations

import numpy as np
import pytest

from model.analysis.find import find_heads, is_punctuation, relation_pairs, token_pairs, word_ids
from model.io.catalog import ModelSpec, available, load
from model.observe import observe

TOKENS = ["[CLS]", "un", "##believ", "##able", "cat", "cat", ".", "[SEP]"]
SPECIAL = [True, False, False, False, False, False, False, True]


def test_word_ids_follow_whitespace():
    text = "unbelievable cat  cat."
    offsets = [(0, 0), (0, 2), (2, 8), (8, 12), (13, 16), (18, 21), (21, 22), (0, 0)]
    assert word_ids(text, offsets, SPECIAL).tolist() == [-1, 0, 0, 0, 1, 2, 2, -1]


def test_relations_give_the_expected_pairs():
    words = np.array([-1, 0, 0, 0, 1, 2, 2, -1])
    prev = relation_pairs("previous", TOKENS, SPECIAL)
    assert prev[3, 2] and prev[1, 0] and not prev[0].any() and not prev[7].any()  # queries: ordinary tokens
    assert relation_pairs("next", TOKENS, SPECIAL)[6, 7]
    same = relation_pairs("same token", TOKENS, SPECIAL)
    assert same[4, 5] and same[5, 4] and not same[4, 4] and same.sum() == 2
    word = relation_pairs("same word", TOKENS, SPECIAL, words)
    assert word[1, 2] and word[3, 1] and word[5, 6] and not word[4].any()
    special = relation_pairs("special", TOKENS, SPECIAL)
    assert special[2].tolist() == SPECIAL and not special[0].any()
    assert relation_pairs("punctuation", TOKENS, SPECIAL)[:, 6].sum() == 6
    assert is_punctuation("...") and is_punctuation("##,") and not is_punctuation("a.") and not is_punctuation("")
    with pytest.raises(ValueError, match="unknown relation"):
        relation_pairs("sideways", TOKENS, SPECIAL)


def test_heads_are_ranked_and_column_heads_flagged():
    n = 6
    uniform = np.full((n, n), 1 / n)
    linker = uniform.copy()
    linker[3] = 0.0
    linker[3, 1] = 1.0  # query 3 looks at key 1; nobody else does
    column = np.zeros((n, n))
    column[:, 1] = 0.9
    column[:, 0] = 0.1  # every query looks at key 1
    patterns = np.stack([uniform, linker, column])[None]  # (1, 3, n, n)
    found = find_heads(patterns, token_pairs(n, [3], [1]), special=[True, *([False] * 4), True])
    assert found.ranking() == [(0, 1), (0, 2), (0, 0)]
    np.testing.assert_allclose(found.score[0], [1 / n, 1.0, 0.9])
    assert found.flagged[0].tolist() == [True, False, True]  # uniform and column: others give key 1 as much
    assert found.chance == pytest.approx(1 / n) and found.n_queries == 1
    relation = find_heads(patterns, relation_pairs("previous", list("abcdef"), [False] * n))
    assert relation.column is None and not relation.flagged.any()
    with pytest.raises(ValueError, match="pick at least one query"):
        find_heads(patterns, np.zeros((n, n), dtype=bool))


def _naive_found(p, pairs, special):
    """Find heads' numbers written out query by query (the definitions in Found's docstring)."""
    L, H, n, _ = p.shape
    queries = [q for q in range(n) if pairs[q].any()]
    score = np.array(
        [[np.mean([p[lay, hd, q][pairs[q]].sum() for q in queries]) for hd in range(H)] for lay in range(L)]
    )
    chance = []
    for lay in range(L):
        seen = [(p[lay, :, q] > 0).any(0) for q in queries]
        chance.append(np.mean([(pairs[q] & s).sum() / max(s.sum(), 1) for q, s in zip(queries, seen)]))
    keys = pairs[queries[0]]
    if not all((pairs[q] == keys).all() for q in queries):
        return score, np.array(chance), None
    others = [o for o in range(n) if not special[o] and o not in queries and not keys[o]]
    column = np.zeros((L, H))
    for lay in range(L):
        can = [o for o in others if (p[lay, :, o][:, keys] > 0).any()] or others
        column[lay] = [np.mean([p[lay, hd, o][keys].sum() for o in can]) for hd in range(H)]
    return score, np.array(chance), column


def test_the_ranking_is_computed_a_layer_at_a_time_with_the_numbers_of_its_definition():
    """A 30-layer model at 512 tokens held every layer's selected rows at once, about 1 GB of fresh memory that took
    up to 1.7 s to fault in on a second visit; now a layer's at a time, with the same numbers."""
    import tracemalloc

    rng = np.random.default_rng(3)
    L, H, n = 12, 4, 96
    p = rng.random((L, H, n, n), dtype=np.float32)
    p[::2] = np.tril(p[::2]) * (np.arange(n)[None, :] > np.arange(n)[:, None] - 9)  # causal, a sliding window
    p /= p.sum(-1, keepdims=True)
    special = np.zeros(n, dtype=bool)
    special[[0, 40]] = True
    pairs = token_pairs(n, [5, 9, 30, 70], [0, 2, 40, 60])  # the same keys for every query: a column measured
    tracemalloc.start()
    found = find_heads(p, pairs, special)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < 3 * p[0].nbytes  # a layer's temporaries (2.3 layers' bytes), not the stack's (12 layers)
    score, chance, column = _naive_found(p, pairs, special)
    np.testing.assert_allclose(found.score, score, rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(found.chance, chance, rtol=1e-6)
    np.testing.assert_allclose(found.column, column, rtol=1e-5, atol=1e-7)
    prev = relation_pairs("previous", [str(i) for i in range(n)], special)  # each query its own key: no column
    found = find_heads(p, prev, special)
    assert found.column is None
    np.testing.assert_allclose(found.score, _naive_found(p, prev, special)[0], rtol=1e-5)


def test_a_column_head_behind_a_sliding_window_is_still_flagged():
    """A window keeps key 1 from far queries: the column check averages the queries that can see it (their zeros
    made a column head look like a link: 0.9 from every query that sees key 1 read 0.18)."""
    n, window = 12, 4
    i, j = np.indices((n, n))
    seen = (j <= i) & (j > i - window)
    column = seen / seen.sum(-1, keepdims=True)  # (N, N): even over what each query sees
    for row in range(1, window + 1):  # the queries that see key 1: 0.9 on it, the rest of their window shares 0.1
        others = seen[row] & (j[row] != 1)
        column[row] = np.where(others, 0.1 / others.sum(), 0.0)
        column[row, 1] = 0.9
    found = find_heads(column[None, None], token_pairs(n, [3], [1]), special=[False] * n)
    assert found.score[0, 0] == pytest.approx(0.9) and found.column[0, 0] == pytest.approx(0.9)
    assert found.flagged[0, 0]


def test_chance_is_each_layers_own_behind_a_sliding_window():
    """A head spreading evenly over a 4-key window gives the previous token a quarter: that is its layer's chance,
    not a head above twice chance (against the global layer's chance, 0.12 at 24 tokens, it counted)."""
    from viz.views.head_captions import found_heads

    n, window = 24, 4
    i, j = np.indices((n, n))
    local, full = (j <= i) & (j > i - window), j <= i
    even = np.stack([local / local.sum(-1, keepdims=True), full / full.sum(-1, keepdims=True)])[:, None]  # (2, 1, n, n)
    found = find_heads(even, relation_pairs("previous", [f"w{k}" for k in range(n)], [False] * n))
    np.testing.assert_allclose(found.chance, found.score[:, 0])  # spreading evenly is chance, layer by layer
    assert found.chance[0] > 2 * found.chance[1]  # the windowed head sits above twice the global chance
    caption = found_heads("previous", found.score, None, np.zeros((2, 1), bool), found.chance, found.n_queries)
    assert "No head gives more than twice chance" in caption and "across the layers' masks" in caption


def test_the_caption_gives_a_long_texts_chance_and_queries_in_figures_one_can_read():
    """Over 1,082 tokens chance is 1 / 1,082: “would give 0.00” beside “10 heads give more than twice chance” read
    as a contradiction, and “1080 queries” lacked the separator every other count has."""
    from viz.views.head_captions import found_heads

    score = np.array([[0.09, 0.0001]])
    caption = found_heads("previous", score, None, np.zeros((1, 2), bool), np.array([1 / 1082]), 1080)
    assert "would give 0.00092;" in caption and "averaged over 1,080 queries" in caption
    assert "1 head gives more than twice chance" in caption

    flagged = np.array([[True, True]])  # tiny weights, as picked tokens on a long text get: not “0.00 vs 0.00”
    small = found_heads("x", np.array([[0.0018, 0.00066]]), np.array([[0.0008, 0.00073]]), flagged, [0.0012], 1)
    assert "with 0.0018 of the weight" in small and "(0.00066 vs 0.00073 from the others)" in small
    assert "(0.002 vs 0.001 from the others)" in small  # the fewest decimals that tell them apart


@pytest.mark.skipif(not available("minilm")[0], reason="all-MiniLM-L6-v2 is not installed")
def test_minilm_it_animal_finds_the_coreference_head_and_flags_the_column_head():
    loaded = load(ModelSpec("minilm"))
    obs = observe(loaded.model, loaded.tokenizer, "The animal didn't cross the street because it was too tired.")
    pairs = token_pairs(obs.n_tokens, [obs.tokens.index("it")], [obs.tokens.index("animal")])
    found = find_heads(obs.patterns, pairs, obs.special)
    top = found.ranking()[:3]
    assert (3, 1) in top and not found.flagged[3, 1]
    assert found.score[3, 1] > 0.6 and found.flagged[5, 11]  # L5H11: every token looks at "animal"
