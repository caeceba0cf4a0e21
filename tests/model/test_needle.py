"""Needle in a haystack: the haystack is built where it says, a run's numbers equal the explicit attention of the
same tokens, the retrieval score follows Wu et al.'s rule, and on SmolLM2 every number equals what Hugging Face's
LLaMA code and Wu et al.'s procedure give (tests/fixtures/needle_smollm2.safetensors, made by
scripts/make_needle_fixture.py)."""

from __future__ import annotations

from itertools import pairwise
from pathlib import Path

import numpy as np
import pytest
import torch

from model.analysis.needle import (
    ANSWER,
    NEEDLE,
    NeedleGrid,
    NeedleRun,
    copies,
    filler_text,
    haystack,
    needle_grid,
    needle_run,
    seconds,
    words,
)
from model.capture import run_with_cache
from model.config import TransformerConfig
from model.io.catalog import ModelSpec, load
from model.transformer import Transformer

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "needle_smollm2.safetensors"


@pytest.fixture(scope="module")
def tok():
    return load(ModelSpec("bundled")).tokenizer


@pytest.mark.parametrize("depth", [0.0, 0.5, 1.0])
@pytest.mark.slow
def test_the_needle_sits_at_a_sentence_break_at_its_depth_and_the_answer_is_inside_it(tok, depth):
    hay = haystack(tok, filler_text(), 400, depth)
    assert abs(len(hay.ids) - 400) <= 3 and hay.text.endswith("San Francisco is")
    assert NEEDLE in hay.text
    a, b = hay.answer
    assert hay.needle[0] <= a < b <= hay.needle[1]
    assert words(" ".join(tok.id_to_token(i) for i in hay.ids[a:b]).replace(" ##", "")) == words(ANSWER)
    before = hay.text[: hay.text.index(NEEDLE)]
    share = hay.needle[0] / len(hay.ids)
    if depth == 0.0:
        assert before == "" and hay.needle[0] <= 1  # [CLS] may come first
    elif depth == 1.0:
        assert hay.text[hay.text.index(NEEDLE) + len(NEEDLE) :].startswith("\n\nQuestion")  # the filler's end
    else:
        assert before.rstrip().endswith(".") and 0.3 < share <= depth + 0.02  # a sentence break before the depth


def test_copies_is_wu_et_al_s_rule():
    ids = [5, 6, 7, 8, 7]
    top = np.array([[2, 4], [1, 3]])  # (L, H) most-attended positions
    # the token just emitted is 7: a copy when the top key is in the answer's span [1, 4) and holds a 7
    assert copies(top, ids, (1, 4), token=7).tolist() == [[True, False], [False, False]]
    assert copies(top, ids, (1, 4), token=8).tolist() == [[False, False], [False, True]]


def run(length: int, depth: float, retrieval, found: float) -> NeedleRun:
    z = np.zeros((1, 2), dtype=np.float32)
    return NeedleRun(length, depth, (0, 1), (), found, np.asarray(retrieval, dtype=np.float32), z, z, z)


def test_a_grids_score_is_the_mean_over_the_runs_that_found_the_answer():
    runs = (run(512, 0.0, [[1.0, 0.0]], 1.0), run(512, 0.5, [[0.5, 0.5]], 0.9), run(512, 1.0, [[0.0, 1.0]], 0.2))
    grid = NeedleGrid(runs, (512,), (0.0, 0.5, 1.0))
    assert grid.scores().tolist() == [[0.75, 0.25]]  # the third run missed the answer: it does not count
    assert grid.table(lambda r: r.found).tolist() == [[1.0], [1.0], [0.0]]


def tiny_decoder(tok, extra: dict, seed: int) -> Transformer:
    """A random 2-layer decoder with grouped K/V heads and RoPE; its learned sinks (gpt-oss's) drawn large enough to
    matter."""
    torch.manual_seed(seed)
    sizes = dict(vocab_size=tok.vocab_size, d_model=32, n_heads=4, n_kv_heads=2, n_layers=2, d_ff=64, max_seq_len=1024)
    cfg = TransformerConfig(**sizes, causal=True, positional="rope", norm_kind="rmsnorm", lm_head=True, **extra)
    model = Transformer(cfg).eval()
    if cfg.attn_sinks:
        with torch.no_grad():
            for block in model.blocks:
                block.attn.sinks.normal_(0, 2)
    return model


WINDOWED = dict(layer_types=("sliding", "global"), sliding_window=40, attn_sinks=True)  # gpt-oss's kind of layer


@pytest.mark.slow
@pytest.mark.parametrize("extra", [{}, WINDOWED], ids=["plain", "sliding window and learned sinks"])
def test_a_runs_numbers_equal_the_explicit_attention_of_the_same_tokens(tok, extra):
    """The sink rows are the model's own weights: a window's mask and a learned sink as the model applies them, over
    the rows that can see position 0 (the window was ignored: far rows weighed a position 0 they cannot see)."""
    model = tiny_decoder(tok, extra, seed=0)
    cfg = model.cfg
    hay = haystack(tok, filler_text(), 300, 0.5)
    result = needle_run(model, tok, hay)
    _, trace = run_with_cache(model, torch.tensor([hay.ids]), kinds=["pattern"])
    patterns = trace.stack("pattern")[:, 0].numpy()  # (L, H, N, N) of the whole haystack
    last = patterns[:, :, -1]  # the answer position: the first decoding step's query
    a, b = max(hay.needle[0], 1), hay.needle[1]
    np.testing.assert_allclose(result.needle_share, last[..., a:b].sum(-1), atol=1e-5)
    np.testing.assert_allclose(result.sink_share, last[..., 0], atol=1e-5)
    rows = np.unique(np.linspace(1, len(hay.ids) - 2, 32).round().astype(int))
    for layer in range(cfg.n_layers):
        sees = rows < cfg.sliding_window if cfg.is_sliding(layer) else rows >= 0  # rows that can see position 0
        want = patterns[layer][:, rows[sees], 0].mean(-1)
        np.testing.assert_allclose(result.sink_rows[layer], want, atol=1e-5)
    first = copies(last.argmax(-1), hay.ids, hay.answer, result.generated[0]) / (hay.answer[1] - hay.answer[0])
    assert np.all(result.retrieval >= first - 1e-6)  # the first step's copies are part of the score


@pytest.mark.slow
@pytest.mark.parametrize("extra", [{}, WINDOWED], ids=["plain", "sliding window and learned sinks"])
def test_a_grid_reads_each_shared_beginning_once_and_equals_runs_read_whole(tok, extra):
    """Haystacks that begin alike (the filler before their needles, the needle at depth 0) are read once up to where
    they part; every run's numbers are those of the haystack read whole with a cache of its own."""
    model = tiny_decoder(tok, extra, seed=1)
    lengths, depths, filler = (200, 320), (0.0, 0.5, 1.0), filler_text()
    read = []
    forward = model.forward
    model.forward = lambda ids, *a, **k: read.append(ids.size(1)) or forward(ids, *a, **k)  # every pass's new tokens
    grid = needle_grid(model, tok, filler, lengths, depths)
    model.forward = forward
    hays = [haystack(tok, filler, n, d) for n in lengths for d in depths]
    prompts = sorted(h.ids[:-1] for h in hays)
    parted = [next(i for i, (x, y) in enumerate(zip(p, q)) if x != y) for p, q in pairwise(prompts)]
    assert sum(n for n in read if n > 1) == len(prompts[0]) + sum(len(q) - i for q, i in zip(prompts[1:], parted))
    assert sum(n for n in read if n > 1) < 0.8 * sum(map(len, prompts))  # depth 0 and 100 % share their filler
    for hay, got in zip(hays, grid.runs):
        want = needle_run(model, tok, hay)
        assert (got.length, got.depth, got.needle, got.generated) == (hay.length, hay.depth, hay.needle, want.generated)
        for name in ("retrieval", "needle_share", "sink_share", "sink_rows"):
            np.testing.assert_allclose(getattr(got, name), getattr(want, name), atol=1e-5, err_msg=name)


def test_the_estimate_counts_a_shared_beginning_once():
    alone = seconds((512,), (0.0,), 1.0) + seconds((1024,), (0.0,), 1.0)
    assert seconds((512, 1024), (0.0,), 1.0) < alone - 1.0  # the 512's prompt is the 1,024's beginning, about
    assert seconds((512,), (0.5,), 1.0) == pytest.approx(1.5 * (512 + 512**2 / 16_384) / 512 + 1.5)


@pytest.mark.slow
def test_an_encoder_is_refused(tok):
    model = load(ModelSpec("bundled")).model
    with pytest.raises(ValueError, match="decoder"):
        needle_run(model, tok, haystack(tok, filler_text(), 300, 0.5))


@pytest.mark.slow  # SmolLM2 reads two haystacks
@pytest.mark.parametrize("key", ["512_50", "1024_0"])
def test_smollm2_equals_transformers_and_wu_et_al(key):
    from safetensors.numpy import load_file

    ref = load_file(str(FIXTURE))
    loaded = load(ModelSpec("smollm2"))
    length, depth = {"512_50": (512, 0.5), "1024_0": (1024, 0.0)}[key]
    hay = haystack(loaded.tokenizer, filler_text(), length, depth)
    assert list(hay.ids) == ref[f"{key}.ids"].tolist()  # transformers' tokenizer reads the same tokens
    assert hay.answer == tuple(ref[f"{key}.answer"]) and hay.needle == tuple(ref[f"{key}.needle"])
    result = needle_run(loaded.model, loaded.tokenizer, hay)
    assert list(result.generated) == ref[f"{key}.generated"].tolist() and result.found
    np.testing.assert_allclose(result.retrieval, ref[f"{key}.retrieval"], atol=1e-6)  # the same copies
    np.testing.assert_allclose(result.needle_share, ref[f"{key}.needle_share"], atol=1e-4)
    np.testing.assert_allclose(result.sink_share, ref[f"{key}.sink_share"], atol=1e-4)
    top = np.unravel_index(np.argmax(result.retrieval), result.retrieval.shape)
    assert top == (18, 6) and result.retrieval[top] == 1.0  # L18H6 copies every token of the answer
