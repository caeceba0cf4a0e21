"""Position inside the scores on the Positional encodings page: DeBERTa's score split into its terms and T5's /
MPNet's relative bias beside the content scores — each term recomputed here from the weights, the sum equal to the
scores the model softmaxes, and every number in the captions the one drawn."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
import torch

from model.io.catalog import ModelSpec
from model.io.checkpoint import load_checkpoint
from model.observe import observe
from viz.figures.common import Theme
from viz.figures.text import signed
from viz.views import ViewUnavailableError, build
from viz.views.source import DirectSource

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
TEXT = "The animal didn't cross the street because it was too tired."


def source(folder: Path) -> DirectSource:
    loaded = load_checkpoint(folder)
    return DirectSource(ModelSpec("folder", path=str(folder)), loaded, observe(loaded.model, loaded.tokenizer, TEXT))


@pytest.fixture(scope="module")
def deberta() -> DirectSource:
    return source(FIXTURES / "hf" / "deberta-v2")


def _bars(view) -> dict[str, np.ndarray]:
    return {t.name: np.asarray(t.y, dtype=float) for t in view.figure.data}


def test_the_split_recomputes_each_term_from_the_weights(deberta):
    model, obs = deberta.loaded.model, deberta.obs
    layer, head, query = 1, 2, 3
    maps, row = build("pe.split", deberta, Theme(), layer=layer, head=head, query=query)
    # by hand: the relative table (normed), the bucket of i − j, q against the keys' projection of it
    attn, cfg, n = model.blocks[layer].attn, model.cfg, obs.n_tokens
    with torch.inference_mode():
        table, index = model.rel_pos(n)
        pos_k = attn.w_k(table).view(-1, cfg.n_heads, cfg.d_k)[:, head]  # (R, d_k)
        pos_q = attn.w_q(table).view(-1, cfg.n_heads, cfg.d_k)[:, head]
    q, k = torch.tensor(obs.q[layer, head]), torch.tensor(obs.k[layer, head])  # (N, d_k)
    scale = (cfg.d_k * 3) ** -0.5
    c2p = np.array([[float(q[i] @ pos_k[index[i, j]]) * scale for j in range(n)] for i in range(n)])
    p2c = np.array([[float(k[j] @ pos_q[index[i, j]]) * scale for j in range(n)] for i in range(n)])
    content = (q @ k.T).numpy() * scale
    bars = _bars(row)
    assert np.allclose(bars["content→position"], c2p[query], atol=1e-5)
    assert np.allclose(bars["position→content"], p2c[query], atol=1e-5)
    assert np.allclose(bars["content→content (q·k)"], content[query], atol=1e-5)
    # their sum is the score the model softmaxes into the pattern transformers gives
    total = bars["= score"]
    assert np.allclose(np.exp(total) / np.exp(total).sum(), obs.patterns[layer, head, query], atol=1e-5)
    assert len(maps.figure.data) >= 4  # three terms and their sum


@pytest.mark.parametrize("head, query", [(1, 2), (0, 1)])  # (0, 1): position terms under 0.005 (it read +0.00)
def test_the_split_caption_states_the_numbers_drawn(deberta, head, query):
    _, row = build("pe.split", deberta, Theme(), layer=0, head=head, query=query)
    bars = _bars(row)
    total = bars["= score"]
    best = int(total.argmax())
    terms = [bars[k][best] for k in ("content→content (q·k)", "content→position", "position→content")]
    share = (abs(terms[1]) + abs(terms[2])) / sum(abs(t) for t in terms)
    tokens = deberta.obs.tokens
    assert f"{share:.0%} of the score to “{tokens[best].strip()}”" in row.caption
    assert f"score {signed(total[best])}" in row.caption
    for name, term in zip(("content→content (q·k)", "content→position", "position→content"), terms, strict=True):
        assert f"{name} {signed(term)}" in row.caption  # a term under 0.005 in two digits (it read +0.00 for 39 %)
    alone = int(bars["content→content (q·k)"].argmax())
    if alone == best:
        assert "would still look most at" in row.caption
    else:
        assert f"would look most at “{tokens[alone].strip()}”" in row.caption


def test_the_bias_view_adds_the_models_bias_to_the_content():
    mpnet = source(FIXTURES / "hf" / "mpnet")
    model, obs = mpnet.loaded.model, mpnet.obs
    maps, row = build("pe.bias", mpnet, Theme(), layer=1, head=3, query=4)
    with torch.inference_mode():
        bias = model.position_bias(obs.n_tokens)[0, 3].numpy()
    bars = _bars(row)
    assert np.allclose(bars["relative-position bias"], bias[4], atol=1e-6)
    assert np.allclose(bars["content→content (q·k)"] + bars["relative-position bias"], obs.scores[1, 3, 4], atol=1e-5)
    # the caption's favourite distance is the bias's largest value, read off the table by distance
    n = obs.n_tokens
    by = {j - i: bias[i, j] for i in range(n) for j in range(n)}
    top = max(by, key=by.get)
    assert f"adds most ({by[top]:+.2f})" in maps.caption
    words = re.search(r"adds most \([^)]*\) to (.*?) and least", maps.caption).group(1)
    assert words == ("the query itself" if top == 0 else f"keys {abs(top)} token{'s' * (abs(top) != 1)} "
                     f"{'after' if top > 0 else 'before'}")  # fmt: skip


def test_a_decoders_bias_is_causal_and_other_models_say_why_not():
    t5 = load_checkpoint(FIXTURES / "hf_encdec" / "t5")
    from model.io.families.encdec import open_stack

    dec = open_stack(t5, "decoder", "a source")
    obs = observe(dec.model, dec.tokenizer, "The animal was tired.")
    src = DirectSource(ModelSpec("folder"), dec, obs)
    _, row = build("pe.bias", src, Theme(), layer=0, head=0, query=3)
    assert len(_bars(row)["= score"]) == 4  # the query and the keys before it
    bert = source(FIXTURES / "hf" / "bert")
    with pytest.raises(ViewUnavailableError, match="relative-position bias"):
        build("pe.bias", bert, Theme())
    with pytest.raises(ViewUnavailableError, match="disentangled"):
        build("pe.split", bert, Theme())


def test_a_decoders_bias_caption_reads_only_the_keys_it_sees():
    from model.io.families.encdec import open_stack

    dec = open_stack(load_checkpoint(FIXTURES / "hf_encdec" / "t5"), "decoder", "a source")
    obs = observe(dec.model, dec.tokenizer, "The animal was tired, and so was the dog.")
    maps, _ = build("pe.bias", DirectSource(ModelSpec("folder"), dec, obs), Theme(), layer=0, head=1, query=3)
    assert "after" not in re.search(r"adds most .* and least [^.]*", maps.caption).group(0)  # no future key
    with torch.inference_mode():
        bias = dec.model.position_bias(obs.n_tokens)[0, 1].numpy()
    n = obs.n_tokens
    seen = {j - i: bias[i, j] for i in range(n) for j in range(i + 1)}
    assert f"adds most ({max(seen.values()):+.2f})" in maps.caption


def _off(on: DirectSource) -> DirectSource:
    """The same model and text with positions switched off (Options(positions=False))."""
    from model.observe import Options

    options = Options(positions=False)
    return DirectSource(on.spec, on.loaded, observe(on.loaded.model, on.loaded.tokenizer, TEXT, options), options)


@pytest.mark.parametrize("family, key", [("mpnet", "pe.bias"), ("deberta-v2", "pe.split")])
def test_with_positions_off_the_split_is_the_run_with_them_on_and_says_so(family, key):
    """Positions switched off leave no bias in the scores: the split of what it added stays the positions-on
    run's, never the positions-off scores minus a bias they do not hold (the T5 fixture's content read −5.37 for a
    score of +0.36)."""
    on = source(FIXTURES / "hf" / family)
    note = (
        "Positions are switched off for this text's run, so its scores hold no "
        + ("relative-position bias" if key == "pe.bias" else "position terms")
        + "; this view splits the scores of the same run with positions on (the other options kept). "
    )
    shown = build(key, on, Theme(), layer=1, head=2, query=4), build(key, _off(on), Theme(), layer=1, head=2, query=4)
    for a, b in zip(*shown, strict=True):
        assert b.caption == note + a.caption
        for ta, tb in zip(a.figure.data, b.figure.data, strict=True):
            za, zb = (np.asarray(t.z if t.type == "heatmap" else t.y, dtype=float) for t in (ta, tb))
            assert np.array_equal(za, zb, equal_nan=True)


def test_with_positions_off_the_score_steps_add_no_bias():
    mpnet = source(FIXTURES / "hf" / "mpnet")
    (on,), (off,) = build("qkv.scores", mpnet, Theme(), query=3), build("qkv.scores", _off(mpnet), Theme(), query=3)
    assert "relative-position bias adds" in on.caption and "bias" not in off.caption
    assert any("bias" in a.text for a in on.figure.layout.annotations)
    assert not any("bias" in a.text for a in off.figure.layout.annotations)
