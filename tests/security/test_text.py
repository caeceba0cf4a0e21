"""Hostile and odd text through the whole path: tokenise -> model -> capture -> every figure -> export."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from model.analysis.norms import value_contributions
from model.analysis.projection import pca_2d
from model.analysis.similarity import head_similarity
from model.analysis.steps import explain_query, observed_head_steps
from model.io.catalog import ModelSpec, load
from model.observe import head_weights, observe
from viz.export.data import matrix_csv
from viz.export.offline import page_html
from viz.figures import (
    attention_heatmap,
    difference_heatmap,
    head_view,
    heads_grid,
    matrix_heatmap,
    metric_spread,
    model_overview,
    qk_scatter,
    query_explained,
    similarity_matrix,
    weights_vs_contributions,
)

HOSTILE = {
    "empty": "",
    "space": " ",
    "whitespace only": " \t\n\r  \n",
    "one character": "a",
    "one punctuation": "?",
    "long words": "word " * 2000,
    "100k characters": "x" * 100_000,
    "300k characters": "abc " * 75_000,
    "NUL": "a\x00b",
    "control characters": "\x01\x02\x07\x1b[31mred\x1b[0m\x7f",
    "only control characters": "\x00\x01\x02",
    "zero-width joiner": "👩\u200d👩\u200d👧 family",
    "zero-width space": "a\u200bb\u200cc\ufeff",
    "right-to-left Arabic": "مرحبا بالعالم",
    "right-to-left Hebrew": "שלום עולם",
    "bidi override": "abc\u202eevil\u202c",
    "combining marks": "e\u0301 a\u0308 Z̤͔ͧ̑̓ä͖̭̈̇lͮ̒ͫǧ̗͚̚o̙̔ͮ̇͐̇",
    "emoji": "I ❤️ attention 🤖🚀",
    "flags": "🇫🇷🇩🇪🇯🇵",
    "skin tones": "👍🏽👋🏿",
    "CJK": "注意力就是你所需要的",
    "Devanagari": "ध्यान सब कुछ है",
    "Thai": "ความสนใจคือทุกสิ่ง",
    "unknown symbols": "∮ ⨌ 𝔘𝔫𝔨𝔫𝔬𝔴𝔫 ꙮ",
    "math alphanumerics": "𝐀𝐭𝐭𝐞𝐧𝐭𝐢𝐨𝐧",
    "lone high surrogate": "a\ud800b",
    "lone low surrogate": "\udfffz",
    "script tag": "<script>alert('x')</script>",
    "img onerror": '<img src=x onerror="alert(1)">',
    "html entities": "&lt;b&gt; &amp; &#x3C;",
    "markdown": "**bold** _it_ [link](javascript:alert(1)) # heading",
    "latex": "$$\\frac{1}{0}$$ $x$",
    "typed [MASK]": "The capital of France is [MASK].",
    "typed [CLS] [SEP]": "[CLS] [SEP] [PAD] [UNK]",
    "fake specials": "<s></s><mask><pad>",
    "many masks": "[MASK] " * 40,
    "newlines": "line one\n\nline two\r\nline three",
    "tabs": "col1\tcol2\tcol3",
    "repeated token": "the " * 300,
    "numbers": "3.14159 2.71828 1e-10 -0 NaN inf",
    "url": "https://example.com/path?q=<x>&y=1",
    "sql": "'; DROP TABLE students; --",
    "quotes": "\"'`´‘’“”",
    "backslashes": "\\\\server\\share\\x00",
    "json": '{"a": [1, 2, {"b": null}]}',
}


@pytest.fixture(scope="module")
def bundled():
    return load(ModelSpec("bundled"))


def test_matrix_has_at_least_forty_inputs():
    assert len(HOSTILE) >= 40


def run_everything(loaded, text: str):
    a = observe(loaded.model, loaded.tokenizer, text)
    assert a.n_tokens >= 2 and a.n_tokens <= loaded.model.cfg.max_seq_len
    assert np.isfinite(a.patterns).all()
    toks = a.tokens
    figs = [
        attention_heatmap(a.patterns[0, 0], toks),
        attention_heatmap(a.score_matrix(1, 2), toks, mode="scores"),
        heads_grid(a.patterns[1], toks),
        difference_heatmap(a.patterns[0, 0], a.patterns[1, 0], toks),
        head_view(a.patterns[0, :2], toks, threshold=0.1),
        model_overview(a.patterns),
        metric_spread({"m": a.metrics["entropy"]}, "entropy"),
    ]
    d, pairs = head_similarity(a.patterns)
    figs.append(similarity_matrix(d, [f"L{i}H{j}" for i, j in pairs]))
    w = head_weights(loaded.model, 0, 0)
    steps = observed_head_steps(a, w, 0, 0)
    figs.append(matrix_heatmap(steps.masked, toks, col_labels=toks, title="masked"))
    qe = explain_query(steps.q, steps.k, 0, a.score_matrix(0, 0)[0])
    figs.append(query_explained(qe, toks, toks[0]))
    coords, ratio = pca_2d(np.concatenate([steps.q, steps.k]))
    figs.append(qk_scatter(coords[: len(toks)], coords[len(toks) :], toks, ratio))
    contrib, _ = value_contributions(steps.pattern, steps.v, w["w_o"])
    figs.append(weights_vs_contributions(steps.pattern, contrib, toks))
    html = page_html([(f"fig {i}", f) for i, f in enumerate(figs)], title=text[:80], caption=text[:300])
    csv = matrix_csv(a.patterns[0, 0], toks, toks)
    return a, figs, html, csv


FAST = {"empty", "script tag", "lone high surrogate", "emoji", "typed [MASK]"}  # 300k characters: 1.5 s, slow


@pytest.mark.parametrize(
    "name", [n if n in FAST else pytest.param(n, marks=pytest.mark.slow) for n in HOSTILE]
)  # the fast tier runs a representative few; every tier runs all
def test_hostile_text_through_every_layer(bundled, name):
    text = HOSTILE[name]
    a, figs, html, csv = run_everything(bundled, text)
    for fig in figs:
        fig.to_json()  # serialises for the browser
    lowered = html.lower()
    assert "<script>alert" not in lowered and "<img src=x" not in lowered
    assert csv.count("\n") == a.n_tokens + 1
    if name in ("long words", "300k characters", "repeated token", "many masks") and a.n_tokens_full > 512:
        # the first 512 tokens keep every pattern; up to the model's limit pages marked "whole text" read all
        beyond = a.n_tokens_full > bundled.model.cfg.max_seq_len
        assert a.truncated and a.n_tokens == 512 and any("read all" in n for n in a.notices)
        assert ("the model reads 8,192" in " ".join(a.notices)) == beyond
    if name in ("empty", "space", "whitespace only"):
        assert any("empty" in n for n in a.notices)
    if name.startswith("lone"):
        assert any("surrogates" in n for n in a.notices) and "\ufffd" in a.text
    if name == "300k characters":
        assert any("only the first" in n for n in a.notices)
    if name == "typed [MASK]":
        assert "[MASK]" in a.tokens  # the user's [MASK] is the mask token: the MLM page predicts it


def test_tokens_render_as_text_in_chips():
    from viz.shell.widgets import token_chips

    html = token_chips(["<script>x</script>", "a&b"], [1, 2], [(0, 8), (8, 11)], [False, False])
    assert "<script>" not in html and "&lt;script&gt;" in html and "a&amp;b" in html


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=st.text(max_size=300))
@pytest.mark.slow
def test_random_unicode(bundled, text):
    a = observe(bundled.model, bundled.tokenizer, text)
    assert np.isfinite(a.patterns).all() and np.allclose(a.patterns.sum(-1), 1.0, atol=1e-5)
    fig = attention_heatmap(a.patterns[0, 0], a.tokens)
    assert len(fig.data[0].y) == a.n_tokens
    for start, end in a.offsets:
        assert 0 <= start <= end <= len(a.text)


def test_text_outside_the_vocabulary_is_named_in_a_notice(bundled):
    a = observe(bundled.model, bundled.tokenizer, "I like 🐈 and 😀 and 🐈.")
    unk = bundled.tokenizer.unk_token
    assert unk == "[UNK]" and a.tokens.count(unk) == 3
    (note,) = [n for n in a.notices if unk in n]
    assert note.startswith("3 piece(s)") and "“🐈”, “😀”" in note  # each piece once, in order
    assert not [n for n in observe(bundled.model, bundled.tokenizer, "I like cats.").notices if unk in n]
