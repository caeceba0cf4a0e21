"""The LLaMA-style pieces on tiny configs: GQA, RMSNorm, SwiGLU, RoPE pairings, the KV cache, generation."""

import numpy as np
import pytest
import torch

from model.attention import KVCache
from model.capture import run_with_cache
from model.config import TransformerConfig
from model.generate import generate, next_token_distribution
from model.io.checkpoint import load_checkpoint
from model.norms import RMSNorm
from model.transformer import Transformer
from tests.security.gguf_files import write_tiny_gguf


def decoder_cfg(**changes) -> TransformerConfig:
    base = dict(
        vocab_size=50, d_model=32, n_heads=4, n_kv_heads=2, n_layers=2, d_ff=48, max_seq_len=40, dropout=0.0,
        norm_kind="rmsnorm", activation="swiglu", positional="rope", rope_style="half", bias=False,
        ff_bias=False, scale_embeddings=False, causal=True, lm_head=True,
    )  # fmt: skip
    return TransformerConfig(**{**base, **changes})


@pytest.fixture
def decoder() -> Transformer:
    torch.manual_seed(0)
    return Transformer(decoder_cfg()).eval()


def test_parameter_count_is_exact_for_decoders():
    for cfg in (decoder_cfg(), decoder_cfg(n_kv_heads=0), decoder_cfg(n_kv_heads=1, activation="gelu")):
        assert cfg.parameter_count() == sum(p.numel() for p in Transformer(cfg).parameters())


def test_config_refuses_kv_heads_that_do_not_divide():
    with pytest.raises(ValueError, match="must divide n_heads"):
        decoder_cfg(n_kv_heads=3)
    with pytest.raises(ValueError, match="either a masked-language-model head or a next-token head"):
        decoder_cfg(mlm_head=True)


def test_gqa_equals_mha_with_each_kv_head_repeated(decoder):
    cfg = decoder.cfg
    mha = Transformer(cfg.replace(n_kv_heads=0)).eval()
    state = dict(decoder.state_dict())
    d_k = cfg.d_k
    for i in range(cfg.n_layers):
        for name in ("w_k", "w_v"):
            w = state[f"blocks.{i}.attn.{name}.weight"]  # (H_kv·d_k, d)
            heads = w.view(cfg.kv_heads, d_k, -1).repeat_interleave(cfg.group_size, dim=0)  # (H, d_k, d)
            state[f"blocks.{i}.attn.{name}.weight"] = heads.reshape(cfg.n_heads * d_k, -1)
    mha.load_state_dict(state)
    ids = torch.randint(0, 50, (1, 12), generator=torch.Generator().manual_seed(0))
    h1, t1 = run_with_cache(decoder, ids, kinds=["pattern", "k"])
    h2, t2 = run_with_cache(mha, ids, kinds=["pattern", "k"])
    assert torch.allclose(h1, h2, atol=1e-5)
    assert torch.allclose(t1.stack("pattern"), t2.stack("pattern"), atol=1e-6)
    assert t1.get("k", 0).shape == (1, 2, 12, d_k)  # k is captured per key/value head
    assert t2.get("k", 0).shape == (1, 4, 12, d_k)


def test_rmsnorm_formula():
    norm = RMSNorm(8, eps=1e-5)
    with torch.no_grad():
        norm.weight.copy_(torch.arange(1.0, 9.0))
    x = torch.randn(3, 8) * 1e4  # the scale a decoder's residual stream reaches
    expected = x / torch.sqrt((x.double() ** 2).mean(-1, keepdim=True) + 1e-5).float() * norm.weight
    assert torch.allclose(norm(x), expected, rtol=1e-5)
    assert torch.isfinite(norm(x.half())).all()  # computed in float32 inside: no overflow in float16


def test_causal_mask_blocks_the_future(decoder):
    ids = torch.randint(0, 50, (1, 9), generator=torch.Generator().manual_seed(1))
    _, trace = run_with_cache(decoder, ids, kinds=["pattern"])
    patterns = trace.stack("pattern")[:, 0]  # (L, H, N, N)
    assert float(patterns.triu(diagonal=1).abs().max()) == 0.0
    assert torch.allclose(patterns.sum(-1), torch.ones(patterns.shape[:-1]))


@pytest.mark.parametrize("positional", ["rope", "learned", "sinusoidal", "none"])
def test_kv_cache_reproduces_the_full_forward(positional):
    """A table of positions (GPT-2's learned one, the post's sinusoids) is added at each new token's own position:
    the cache is as exact as with RoPE."""
    torch.manual_seed(0)
    decoder = Transformer(decoder_cfg(positional=positional)).eval()
    ids = torch.randint(0, 50, (1, 15), generator=torch.Generator().manual_seed(2))
    with torch.inference_mode():
        full = decoder(ids)
        cache = KVCache(decoder.cfg.n_layers)
        parts = [decoder(ids[:, :10], cache=cache)]
        for i in range(10, 15):
            parts.append(decoder(ids[:, i : i + 1], cache=cache))
    assert cache.length == 15
    assert torch.allclose(torch.cat(parts, dim=1), full, atol=1e-5)


def test_generation_with_learned_positions_uses_the_cache_like_gpt2():
    torch.manual_seed(0)
    gpt2_like = Transformer(decoder_cfg(positional="learned", norm_kind="layernorm", activation="gelu")).eval()
    prompt = [3, 14, 15, 9, 2]
    cached, plain = generate(gpt2_like, prompt, 6), generate(gpt2_like, prompt, 6, use_cache=False)
    assert [s.token for s in cached] == [s.token for s in plain]
    assert max(abs(a.rows - b.rows).max() for a, b in zip(cached, plain, strict=True)) < 1e-5


def test_kv_cache_refuses_a_bidirectional_model():
    model = Transformer(decoder_cfg(causal=False, lm_head=False)).eval()
    with pytest.raises(ValueError, match="KV cache needs a causal model"):
        model(torch.zeros(1, 3, dtype=torch.long), cache=KVCache(2))


def test_generation_with_and_without_the_cache_agree(decoder):
    prompt = [3, 14, 15, 9, 2]
    cached = generate(decoder, prompt, 6)
    plain = generate(decoder, prompt, 6, use_cache=False)
    assert [s.token for s in cached] == [s.token for s in plain]
    assert cached[-1].rows.shape == (2, 4, len(prompt) + 5)  # the predicting query sees prompt + 5 new
    for a, b in zip(cached, plain, strict=True):
        assert abs(a.rows - b.rows).max() < 1e-5
        assert abs(a.rows.sum(-1) - 1).max() < 1e-5
    sampled = generate(decoder, prompt, 6, temperature=1.0, seed=3)
    assert [s.token for s in sampled] == [s.token for s in generate(decoder, prompt, 6, temperature=1.0, seed=3)]


def test_temperature():
    logits = torch.tensor([2.0, 1.0, 0.0])
    assert next_token_distribution(logits, 0).tolist() == [1.0, 0.0, 0.0]
    hot, cold = next_token_distribution(logits, 2.0), next_token_distribution(logits, 0.5)
    assert cold[0] > torch.softmax(logits, 0)[0] > hot[0]


def test_tiny_gguf_round_trip(tmp_path):
    """A GGUF written by the gguf package (Q8_0 and F32 tensors) loads, tokenises and generates."""
    loaded = load_checkpoint(write_tiny_gguf(tmp_path / "tiny.gguf", quant="Q8_0"))
    cfg = loaded.model.cfg
    assert (cfg.n_heads, cfg.kv_heads, cfg.norm_kind, cfg.activation) == (4, 2, "rmsnorm", "swiglu")
    enc = loaded.tokenizer.encode("the then")
    assert enc.tokens == ("t", "he", " the", "n")
    steps = generate(loaded.model, list(enc.ids), 3)
    assert len(steps) == 3 and all(0 <= s.token < cfg.vocab_size for s in steps)


@pytest.mark.parametrize("causal", [None, False])
@pytest.mark.parametrize("scale", [True, False])
def test_recomputed_scores_equal_the_captured_ones(decoder, causal, scale):
    """Observation.score_matrix rebuilds one head's scores from q and k (GQA included) instead of capturing
    every head's: the same numbers, −inf where the mask blocks."""
    from model.io.tokenizer import Tokenizer
    from model.observe import ATTENTION_KINDS, Options, observe
    from tests.security.gguf_files import _vocab

    tokens, merges, _ = _vocab()
    from model.io.gguf_tokenizer import byte_level_bpe

    tok: Tokenizer = byte_level_bpe(tokens, merges, ["<|endoftext|>"], split_digits=True)
    model = Transformer(decoder_cfg(vocab_size=len(tokens))).eval()
    text = "the then there 42"
    lean = observe(model, tok, text, Options(causal=causal, scale=scale))
    full = observe(model, tok, text, Options(causal=causal, scale=scale, kinds=(*ATTENTION_KINDS, "scores")))
    assert lean.scores is None and full.scores is not None
    for layer in range(2):
        for head in range(4):
            a, b = lean.score_matrix(layer, head), full.score_matrix(layer, head)
            assert np.array_equal(np.isinf(a), np.isinf(b))
            np.testing.assert_allclose(a[np.isfinite(a)], b[np.isfinite(b)], rtol=1e-5, atol=1e-5)
    assert np.isinf(lean.score_matrix(0, 0)).any() == (causal is None)


def test_predictions_from_an_observation_equal_a_fresh_forward(decoder):
    from model.generate import next_token_predictions, predictions_from_hidden

    ids = torch.randint(0, 50, (1, 11), generator=torch.Generator().manual_seed(4))
    with torch.inference_mode():
        hidden = decoder(ids)[0].numpy()  # as an Observation keeps it
    fresh = next_token_predictions(decoder, ids, temperature=0.7, k=5)
    reused = predictions_from_hidden(decoder, hidden, temperature=0.7, k=5)
    assert [[t for t, _ in row] for row in fresh] == [[t for t, _ in row] for row in reused]
    assert max(abs(a - b) for r1, r2 in zip(fresh, reused) for (_, a), (_, b) in zip(r1, r2)) < 1e-6


@pytest.mark.parametrize("extra", [(), ("scores",)])
def test_expected_bytes_are_twice_what_a_capture_keeps(extra):
    """The admission estimate (viz/shell/gate.py) is computed before the forward pass, from the token count and
    the config; it must match what the capture then holds (GQA: K and V have fewer heads than Q)."""
    from model.io.gguf_tokenizer import byte_level_bpe
    from model.observe import ATTENTION_KINDS, Options, expected_bytes, observe
    from tests.security.gguf_files import _vocab

    tokens, merges, _ = _vocab()
    tok = byte_level_bpe(tokens, merges, ["<|endoftext|>"], split_digits=True)
    model = Transformer(decoder_cfg(vocab_size=len(tokens))).eval()
    options = Options(kinds=(*ATTENTION_KINDS, *extra))
    text = "the then there 42 " * 5
    obs = observe(model, tok, text, options)
    assert model.cfg.kv_heads < model.cfg.n_heads
    assert expected_bytes(model, tok.encode(text, max_len=model.cfg.max_seq_len), options) == 2 * obs.capture_bytes


def test_a_real_gpt2_folder_generates_with_its_cache():
    """GPT-2's KV cache is the standard one (issue 49): its learned positions are added at each new token's own
    position, so the cached generation equals the uncached one token for token."""
    from model.io.catalog import ModelSpec, load
    from tests.hf_fixtures import FIXTURES

    loaded = load(ModelSpec("folder", path=str(FIXTURES / "gpt2")))
    assert loaded.model.cfg.positional == "learned"
    prompt = loaded.tokenizer.encode("The animal didn't cross the street").ids
    cached, plain = generate(loaded.model, list(prompt), 5), generate(loaded.model, list(prompt), 5, use_cache=False)
    assert [s.token for s in cached] == [s.token for s in plain]
    assert max(abs(a.rows - b.rows).max() for a, b in zip(cached, plain, strict=True)) < 1e-5


def test_generation_says_when_the_context_is_full(decoder):
    limit = decoder.cfg.max_seq_len
    with pytest.warns(UserWarning, match=f"only 3 of the 8 tokens asked for fit in the model's context of {limit}"):
        steps = generate(decoder, list(range(1, limit - 2)), 8)
    assert len(steps) == 3
    with pytest.raises(ValueError, match=f"fill the model's context of {limit}: nothing can follow"):
        generate(decoder, [1] * limit, 2)
