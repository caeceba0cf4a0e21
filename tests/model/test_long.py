"""Long inputs: the fused forward pass equals the explicit one, and everything model/long.py computes from the
captured q and k — exact windows, rows, columns, block means, head metrics, sink shares, relations — equals what the
in-memory patterns give (tests at 2,048 tokens on a tiny decoder, and on encoders with special tokens and windows)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from model.analysis.decoder import sink_mass
from model.analysis.find import RELATIONS, find_heads, relation_pairs, token_pairs, word_ids
from model.analysis.find_long import picked, related
from model.analysis.kinds import normalised_entropy, relation_score
from model.analysis.long_heads import long_sink_mass
from model.analysis.metrics import diagonal_mass, head_metrics
from model.analysis.rows import OFFSETS, offset_name
from model.analysis.sinks import head_types, sink_shares, streamed_types
from model.analysis.streaming import Rule
from model.capture import run_with_cache
from model.config import TransformerConfig
from model.long import Cancelled, LongObservation
from model.transformer import Transformer
from model.whole import capture_qk

TOL = 1e-6


def tiny(**kw) -> Transformer:
    base = dict(vocab_size=60, d_model=32, n_heads=4, n_layers=2, d_ff=64, max_seq_len=4096, dropout=0.0)
    torch.manual_seed(0)
    return Transformer(TransformerConfig(**{**base, **kw})).eval()


VARIANTS = {
    "decoder GQA RoPE": dict(causal=True, n_kv_heads=2, positional="rope", norm_kind="rmsnorm"),
    "encoder": dict(causal=False),
    "causal sliding window": dict(causal=True, layer_types=("sliding", "global"), sliding_window=7),
    "bidirectional sliding window": dict(causal=False, layer_types=("sliding", "global"), sliding_window=8),
}


@pytest.mark.parametrize("name", VARIANTS)
def test_the_fused_pass_equals_the_explicit_one(name):
    model = tiny(**VARIANTS[name])
    ids = torch.randint(0, 60, (2, 70))
    padding = torch.ones(2, 70, dtype=torch.long)
    padding[1, 50:] = 0
    with torch.no_grad():
        for mask in (None, padding):
            for scale in (True, False):
                a = model(ids, mask, scale=scale)
                b = model(ids, mask, scale=scale, fused=True)
                rows = slice(None) if mask is None else slice(0, 50)  # padded rows' outputs are not defined
                assert (a[:, rows] - b[:, rows]).abs().max() < 1e-5


@pytest.mark.parametrize("name", ["decoder GQA RoPE", "encoder"])
def test_heads_switched_off_are_off_in_the_whole_pass_as_in_the_pages_run(name):
    """The sidebar's heads off reach the text read whole: its later layers' q and k are the ablated run's (the
    pass ran every head, so a deep layer's map ignored the switch)."""
    model = tiny(**VARIANTS[name])
    ids = torch.randint(0, 60, (1, 40))
    off = ((0, 1), (0, 3))
    _, trace = run_with_cache(model, ids, kinds=["q", "k"], ablate=off)
    q1, k1 = trace.get("q", 1)[0].numpy(), trace.get("k", 1)[0].numpy()  # (H, N, d_k) of layer 1
    q, k, _ = capture_qk(model, ids, ablate=off)
    q_on, _, _ = capture_qk(model, ids)
    assert np.allclose(q[1], q1, atol=1e-5) and np.allclose(k[1], k1, atol=1e-5)
    assert np.array_equal(q[0], q_on[0]) and not np.allclose(q[1], q_on[1], atol=1e-3)


def test_is_causal_is_refused_without_the_fused_kernel():
    model = tiny(causal=True)
    x = torch.zeros(1, 3, 32)
    with pytest.raises(ValueError, match="fused kernel"):
        model.blocks[0].attn(x, is_causal=True)


def text_of(ids: list[int], special: set[int]) -> tuple[list[str], list[tuple[int, int]], str]:
    """Labels, offsets and a text for token ids: every third token glued to the one before it (a word of pieces),
    ids 5 and 6 punctuation, ``special`` positions [CLS]/[SEP]."""
    tokens, offsets, parts, pos = [], [], [], 0
    for i, t in enumerate(ids):
        if i in special:
            tokens.append("[CLS]" if i == 0 else "[SEP]")
            offsets.append((0, 0))
            continue
        label = "," if t in (5, 6) else f"w{t}"
        glue = i % 3 == 2 and i - 1 not in special
        if not glue and parts:
            parts.append(" ")
            pos += 1
        tokens.append(label)
        offsets.append((pos, pos + len(label)))
        parts.append(label)
        pos += len(label)
    return tokens, offsets, "".join(parts)


def long_and_patterns(model: Transformer, n: int, special: set[int] = frozenset()):
    torch.manual_seed(1)
    ids = torch.randint(0, 60, (1, n))
    _, trace = run_with_cache(model, ids, kinds=["pattern", "scores"])
    patterns = trace.stack("pattern")[:, 0].numpy()
    scores = trace.stack("scores")[:, 0].numpy()
    q, k, hidden = capture_qk(model, ids)
    tokens, offsets, text = text_of(ids[0].tolist(), set(special))
    mask = np.array([i in special for i in range(n)])
    cfg = model.cfg
    rules = tuple(
        Rule(cfg.causal, cfg.sliding_window if cfg.is_sliding(i) else 0, cfg.d_k**-0.5) for i in range(cfg.n_layers)
    )
    long = LongObservation(tokens, ids[0].tolist(), offsets, mask, text, q, k, hidden, cfg.causal, rules, 0.0)
    return long, patterns, scores


def block_means(full: np.ndarray, edges: np.ndarray, blocked: np.ndarray) -> np.ndarray:
    """Means over the unmasked cells of each grid cell, −inf where a cell is all masked (as the screen averages)."""
    cells = len(edges) - 1
    out = np.full((cells, cells), -np.inf)
    for a in range(cells):
        for b in range(cells):
            seen = ~blocked[edges[a] : edges[a + 1], edges[b] : edges[b + 1]]
            if seen.any():
                out[a, b] = full[edges[a] : edges[a + 1], edges[b] : edges[b + 1]][seen].mean()
    return out


@pytest.fixture(scope="module")
def decoder_2048():
    return long_and_patterns(tiny(**VARIANTS["decoder GQA RoPE"]), 2048)


@pytest.mark.slow
def test_at_2048_tokens_every_weight_score_row_and_column_equals_the_full_computation(decoder_2048):
    long, patterns, scores = decoder_2048
    n = long.n_tokens
    assert n == 2048 and long.width == 13 and long.cells == 158
    for layer in range(long.n_layers):
        every = long.weights(layer, None, (0, n), (0, n))  # (H, N, N) in row blocks
        assert np.abs(every - patterns[layer]).max() <= TOL
        window = long.weights(layer, 3, (1500, 1600), (1400, 1700))
        assert np.abs(window - patterns[layer, 3, 1500:1600, 1400:1700]).max() <= TOL
        s = long.scores(layer, 1, (100, 300), (0, 400))
        assert np.array_equal(np.isinf(s), np.isinf(scores[layer, 1, 100:300, :400]))
        finite = np.isfinite(s)
        assert np.abs(s[finite] - scores[layer, 1, 100:300, :400][finite]).max() <= 1e-4
        assert np.abs(long.row(layer, 2, 1999) - patterns[layer, 2, 1999]).max() <= TOL
        assert np.abs(long.column(layer, 2, 7) - patterns[layer, 2, :, 7]).max() <= TOL


@pytest.mark.slow
def test_at_2048_tokens_the_grids_are_the_screens_block_means(decoder_2048):
    long, patterns, _ = decoder_2048
    edges = long.edges()
    blocked = np.triu(np.ones((long.n_tokens,) * 2, dtype=bool), 1)
    for layer in range(long.n_layers):
        for head in (0, 3):
            got, want = long.grid(layer, head), block_means(patterns[layer, head], edges, blocked)
            assert np.array_equal(np.isfinite(got), np.isfinite(want))
            assert np.abs(got[np.isfinite(got)] - want[np.isfinite(want)]).max() <= TOL
            peak = long.grid(layer, head, "max")  # each cell's largest weight
            full = patterns[layer, head]
            for a, b in ((0, 0), (40, 12), (157, 157), (157, 3)):
                want = full[edges[a] : edges[a + 1], edges[b] : edges[b + 1]].max()
                assert abs(peak[a, b] - want) <= TOL if np.isfinite(peak[a, b]) else want == 0
    pooled, bounds = long.pooled(32)  # plain means, masked cells as 0: what downsample gives a full pattern
    assert pooled.shape[-1] == len(bounds) - 1 <= 32
    a, b = bounds[5], bounds[6]
    assert abs(pooled[1, 2, 5, 5] - patterns[1, 2, a:b, a:b].mean()) <= TOL


@pytest.mark.slow
def test_at_2048_tokens_streamed_metrics_equal_the_in_memory_ones(decoder_2048):
    long, patterns, _ = decoder_2048
    stats, special = long.stats(), long.special
    for name, value in head_metrics(patterns, special=special).items():
        assert np.abs(stats[name] - value).max() <= 1e-3 * max(1.0, float(np.abs(value).max())), name
    for name, value in sink_shares(patterns, long.tokens, special, causal=True).items():
        assert np.abs(stats[name] - value).max() <= TOL, name
    words = word_ids(long.text, long.offsets, special)
    for relation in ("same token", "same word"):
        pairs = relation_pairs(relation, long.tokens, special, words)
        assert pairs.any()
        assert np.abs(stats[relation] - relation_score(patterns, pairs)).max() <= TOL, relation
    assert np.abs(stats["broad"] - normalised_entropy(patterns)).max() <= 1e-5
    received = np.stack([long.summary(i).received for i in range(long.n_layers)])
    assert np.abs(received - patterns.sum(-2)).max() <= 1e-4


@pytest.mark.parametrize("name", ["encoder", "causal sliding window", "bidirectional sliding window"])
@pytest.mark.slow
def test_encoders_and_windows_with_special_tokens(name):
    n = 600
    long, patterns, _ = long_and_patterns(tiny(**VARIANTS[name]), n, special={0, n - 1})
    assert long.tokens[0] == "[CLS]" and long.tokens[-1] == "[SEP]"
    stats = long.stats()
    for metric, value in head_metrics(patterns, special=long.special).items():
        assert np.abs(stats[metric] - value).max() <= 1e-3 * max(1.0, float(np.abs(value).max())), metric
    shares = sink_shares(patterns, long.tokens, long.special, causal=long.causal)
    for target in ("[CLS]", "[SEP]", "punctuation", "position 0"):  # over the queries a window lets see it
        assert np.abs(stats[target] - shares[target]).max() <= TOL, target
    assert np.abs(long_sink_mass(long) - sink_mass(patterns)).max() <= TOL
    assert np.abs(stats["broad"] - normalised_entropy(patterns)).max() <= 1e-5  # each layer over its own window
    for k in OFFSETS:  # the head types' "positional": every row's weight k keys away
        assert np.abs(stats[offset_name(k)] - diagonal_mass(patterns, k).mean(-1)).max() <= TOL, k
    types = head_types(patterns, long.tokens, long.special, long.causal)
    np.testing.assert_array_equal(streamed_types(stats, long.causal), types)
    whole, kept = long.pair(300, 290), find_heads(patterns, token_pairs(n, [300], [290]), long.special)
    assert np.abs(whole.score - kept.score).max() <= TOL and np.abs(whole.column - kept.column).max() <= TOL
    for layer in range(long.n_layers):
        rule = long.rules[layer]
        i, j = np.indices((n, n))
        blocked = (j > i) if rule.causal else np.zeros((n, n), dtype=bool)
        if rule.window:
            blocked |= (j <= i - rule.window) if rule.causal else (np.abs(i - j) > rule.window // 2)
        got, want = long.grid(layer, 1), block_means(patterns[layer, 1], long.edges(), blocked)
        assert np.array_equal(np.isfinite(got), np.isfinite(want))
        assert np.abs(got[np.isfinite(got)] - want[np.isfinite(want)]).max() <= TOL


def test_cancel_stops_the_summary_and_keeps_nothing_half_made():
    long, _, _ = long_and_patterns(tiny(causal=True), 300)
    with pytest.raises(Cancelled):
        long.summarise(cancel=lambda: True)
    assert long.summarised == 0
    calls = {"n": 0}

    def later() -> bool:  # 300 tokens are one block of rows a layer: the second layer's first check cancels
        calls["n"] += 1
        return calls["n"] > 1

    with pytest.raises(Cancelled):
        long.summarise(cancel=later)
    assert long.summaries[0] is not None and long.summaries[1] is None  # a cancelled layer is not stored
    long.summarise()
    assert long.summarised == long.n_layers


def test_capture_reports_progress_and_cancels_between_layers():
    model = tiny(causal=True, n_layers=3)
    ids = torch.randint(0, 60, (1, 40))
    seen = []
    q, k, _ = capture_qk(model, ids, progress=lambda done, total: seen.append((done, total)))
    assert seen == [(1, 3), (2, 3), (3, 3)]
    _, trace = run_with_cache(model, ids, kinds=["q", "k"])
    # layer 0's q and k are the same numbers; later layers read a stream the fused kernel rounded differently
    assert np.abs(q - trace.stack("q")[:, 0].numpy()).max() <= 1e-5
    assert np.abs(k - trace.stack("k")[:, 0].numpy()).max() <= 1e-5
    with pytest.raises(Cancelled):
        capture_qk(model, ids, cancel=lambda: True)
    from model.capture import leftover_hooks

    assert leftover_hooks(model) == 0


def test_a_text_read_layer_by_layer_offers_each_layer_as_soon_as_it_is_read():
    """prepare_long makes the arrays (nothing read), read_long fills them: at each layer's report that layer's q and
    k are final and its weights can be drawn, the next layers are refused, and the pass is complete only at the end."""
    from model.io.catalog import ModelSpec, load
    from model.whole import observe_long, prepare_long, read_long

    loaded = load(ModelSpec("bundled"))
    text = " ".join(["The animal did not cross the street because it was too tired."] * 16)
    whole = observe_long(loaded.model, loaded.tokenizer, text)
    long = prepare_long(loaded.model, loaded.tokenizer, text)
    assert (long.ready, long.complete, long.n_tokens) == (0, False, whole.n_tokens)
    with pytest.raises(ValueError, match="layer 0 is not read yet"):
        long.summary(0)
    seen = []

    def check(done: int, total: int) -> None:
        seen.append((long.ready, long.complete))
        span = (0, long.n_tokens)
        np.testing.assert_allclose(long.weights(done - 1, 1, span, span), whole.weights(done - 1, 1, span, span),
                                   atol=1e-6)  # fmt: skip
        if done < total:
            with pytest.raises(ValueError, match=f"layer {done} is not read yet"):
                long.weights(done, 0, (0, 4), (0, 4))

    read_long(long, loaded.model, progress=check)
    layers = loaded.model.cfg.n_layers
    assert seen == [(i, False) for i in range(1, layers + 1)]
    assert long.complete and long.forward_ms > 0 and long.hidden.shape == whole.hidden.shape
    np.testing.assert_array_equal(long.q, whole.q)
    np.testing.assert_array_equal(long.hidden, whole.hidden)


@pytest.mark.parametrize("causal", [True, False])
@pytest.mark.parametrize("window", [0, 1, 2, 5, 8])
def test_the_rows_that_see_a_set_of_keys_are_those_the_mask_lets_see_one(causal, window):
    """seeing()'s running counts give the rows Rule.blocked leaves a key of the set (sink shares' queries)."""
    from model.analysis.rows import seeing

    rng = np.random.default_rng(window)
    for n in (1, 2, 7, 30):
        rule = Rule(causal, window, 1.0)
        for _ in range(5):
            cols = rng.random(n) < 0.2
            keys = torch.from_numpy(np.flatnonzero(cols))
            blocked = rule.blocked(torch.arange(n), keys) if len(keys) else torch.ones(n, 1, dtype=torch.bool)
            want = torch.ones(n, dtype=torch.bool) if blocked is None else (~blocked).any(-1)
            assert torch.equal(seeing(rule, cols, n), want), (n, cols)


@pytest.mark.parametrize("name", VARIANTS)
def test_find_heads_over_the_whole_text_equals_find_heads_on_its_patterns(name):
    """Every relation and picked tokens, read whole (no N × N pattern), against find_heads on the full patterns:
    score, column, each layer's chance and the queries counted."""
    n = 600
    model = tiny(**VARIANTS[name])
    long, patterns, _ = long_and_patterns(model, n, special={0} if model.cfg.causal else {0, n - 1})
    words = word_ids(long.text, long.offsets, long.special)
    cases = [(r, related(long, r), relation_pairs(r, long.tokens, long.special, words)) for r in RELATIONS[1:]]
    for queries, keys in (((300,), (290,)), ((100, 450, 599), (5, 100, 598)), ((7, 8), (7,))):
        cases.append((f"{queries} → {keys}", picked(long, queries, keys), token_pairs(n, queries, keys)))
    for what, got, pairs in cases:
        want = find_heads(patterns, pairs, long.special)
        assert got.n_queries == want.n_queries, what
        assert np.abs(got.score - want.score).max() <= 1e-5, what
        assert np.abs(got.chance - want.chance).max() <= 1e-9, what
        assert (got.column is None) == (want.column is None), what
        if want.column is not None:
            assert np.abs(got.column - want.column).max() <= 1e-5, what
    rows, keys = np.array([599, 3, 300, 0]), np.array([0, 598, 297, 300, 5])  # any order, blocked cells too
    for layer in range(long.n_layers):
        want = patterns[layer][:, rows][:, :, keys]  # (H, R, K)
        assert np.abs(long.weights_at(layer, rows, keys) - want).max() <= TOL
        assert np.abs(long.weights_at(layer, rows, keys, total=True) - want.sum(-1)).max() <= 1e-5


@pytest.mark.parametrize("name", VARIANTS)
def test_thumbnails_without_the_summary_are_the_patterns_block_means(name, monkeypatch):
    """The overview's thumbnails through the fused kernel (one-hot key blocks as values), before any summary: the
    same plain block means as the full patterns give, windows included (their rows a block at a time); and the same
    as from the summary."""
    from model.analysis import thumbs

    monkeypatch.setattr(thumbs, "WINDOW_ROWS", 96)  # several row blocks behind a window, not one
    n = 700
    long, patterns, _ = long_and_patterns(tiny(**VARIANTS[name]), n)
    quick, bounds = long.pooled(32)
    assert long.summarised == 0  # nothing was streamed for them
    for layer in range(long.n_layers):
        for a, b in ((0, 0), (5, 3), (31, 31), (20, 29)):
            want = patterns[layer, :, bounds[a] : bounds[a + 1], bounds[b] : bounds[b + 1]].mean((-2, -1))
            assert np.abs(quick[layer, :, a, b] - want).max() <= TOL
    long.summarise()
    slow, _ = long.pooled(32)
    assert np.abs(quick - slow).max() <= TOL


def test_pages_go_first_the_background_summary_waits_while_a_page_computes():
    """model/analysis/turns.py: the background run checks between blocks of rows and waits there while any page
    computes (a page's summary of a layer counts), and a cancel still stops it while it waits."""
    import threading

    long, _, _ = long_and_patterns(tiny(causal=True, n_layers=4), 300)
    seen = []
    long.summary(3, cancel=lambda: seen.append(long.turns.serving_now) or False)  # a page's: it is computing
    assert seen == [1] and long.turns.serving_now == 0
    with long.turns.serving():
        run = threading.Thread(target=long.summarise)
        run.start()
        run.join(0.6)
        assert run.is_alive() and long.summarised == 1  # waiting at its first check, nothing streamed
    run.join(30)
    assert not run.is_alive() and long.summarised == 4
    stop = threading.Event()
    again, _, _ = long_and_patterns(tiny(causal=True, n_layers=2), 300)
    errors = []

    def background() -> None:
        try:
            again.summarise(cancel=stop.is_set)
        except Cancelled as exc:
            errors.append(exc)

    with again.turns.serving():
        run = threading.Thread(target=background)
        run.start()
        stop.set()
        run.join(5)  # stopped while it waited for the page
        assert not run.is_alive() and errors and again.summarised == 0


def test_a_pages_computation_hands_what_it_freed_back(monkeypatch):
    """The server's heaps keep freed memory (model/memory.py); each layer's thumbnails, summary or exact weights a
    page computes trims them after it, as the background run does after each of its layers."""
    import model.long

    trims = []
    monkeypatch.setattr(model.long, "release_freed_memory", lambda: trims.append(1))
    long, _, _ = long_and_patterns(tiny(causal=True, n_layers=3), 300)
    long.pooled(8)  # the kernel's block sums, one layer at a time
    assert len(trims) == 3
    long.summary(1)
    long.weights_at(1, [5, 6], [0, 1])
    assert len(trims) == 5
    long.summarise()  # the background run: the job trims after its layers (viz/shell/longrun.py)
    assert len(trims) == 5


@pytest.mark.parametrize("name", ["decoder GQA RoPE", "causal sliding window"])
def test_a_page_showing_one_head_streams_that_head_alone_and_the_same_numbers(name):
    """The map and its caption need one head of a layer: it is streamed alone (a ninth of SmolLM2's layer), before
    the layer's summary, and gives way to it once the layer is streamed."""
    long, patterns, _ = long_and_patterns(tiny(**VARIANTS[name]), 300)
    edges = long.edges()
    for layer in range(long.n_layers):
        for head in (0, 3):  # the first and the last query head of their key/value heads (GQA: 2 heads each)
            alone, index = long.head_summary(layer, head)
            assert index == 0 and alone.grid.shape[0] == 1 and long.summaries[layer] is None
            assert long.head_summary(layer, head)[0] is alone  # kept, not streamed again
            rule = long.rules[layer]
            i, j = np.indices((long.n_tokens,) * 2)
            blocked = (j > i) | ((j <= i - rule.window) if rule.window else False)
            got, want = long.grid(layer, head), block_means(patterns[layer, head], edges, blocked)
            assert np.abs(got[np.isfinite(got)] - want[np.isfinite(want)]).max() <= TOL
        whole = long.summary(layer)
        for head in (0, 3):
            assert long.head_summary(layer, head) == (whole, head)  # the layer's now
        assert not [key for key in long._heads if key[0] == layer]
        for stat, value in alone.stats.items():  # head 3's, streamed alone above
            assert np.allclose(value[0], whole.stats[stat][3], atol=TOL, equal_nan=True), stat
        assert np.abs(alone.received[0] - whole.received[3]).max() <= TOL
        assert np.abs(alone.lse[0] - whole.lse[3]).max() <= TOL
        assert np.abs(alone.grid[0] - whole.grid[3]).max() <= TOL
