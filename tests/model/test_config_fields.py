"""The behaviours the Hugging Face families added to TransformerConfig, each tested on its own: sliding-window
layers (causal and bidirectional), a bias on Q/K/V but not O, an untied next-token head, learned positions that
start at an offset."""

from __future__ import annotations

import pytest
import torch

from model.capture import run_with_cache
from model.config import TransformerConfig
from model.transformer import Transformer

BASE = dict(vocab_size=50, d_model=16, n_heads=2, n_layers=2, d_ff=32, max_seq_len=32, dropout=0.0)


def patterns(cfg: TransformerConfig, n: int = 9) -> torch.Tensor:
    torch.manual_seed(0)
    model = Transformer(cfg).eval()
    _, trace = run_with_cache(model, torch.randint(0, 50, (1, n)), kinds=["pattern"])
    return trace.stack("pattern")[:, 0]  # (L, H, N, N)


def test_causal_sliding_layer_sees_only_its_window():
    cfg = TransformerConfig(**BASE, causal=True, positional="rope", layer_types=("sliding", "global"), sliding_window=3)
    p = patterns(cfg)
    i, j = torch.arange(9)[:, None], torch.arange(9)[None, :]
    assert torch.equal(p[0, 0] > 0, (j <= i) & (j > i - 3))  # itself and the 2 before it
    assert torch.equal(p[1, 0] > 0, j <= i)  # the global layer: the causal mask only
    assert torch.allclose(p.sum(-1), torch.ones(2, 2, 9))


def test_bidirectional_sliding_layer_sees_half_the_window_each_side():
    cfg = TransformerConfig(**BASE, layer_types=("global", "sliding"), sliding_window=4)
    p = patterns(cfg)
    i, j = torch.arange(9)[:, None], torch.arange(9)[None, :]
    assert torch.equal(p[1, 1] > 0, (i - j).abs() <= 2) and bool((p[0] > 0).all())


def test_reachable_cells_are_what_the_patterns_can_give_weight_to_through_the_layers():
    """One layer's cells are its drawn pattern's nonzero ones; through two sliding layers a token reaches twice as far
    back (what a rollout or a per-layer measure over them can give anything to)."""
    from model.masks import reachable

    kinds = ("sliding", "sliding")
    cfg = TransformerConfig(**BASE, causal=True, positional="rope", layer_types=kinds, sliding_window=3)
    p = patterns(cfg)
    for layer in range(2):
        assert torch.equal(reachable(cfg, 9, True, layer), p[layer, 0] > 0)
    i, j = torch.arange(9)[:, None], torch.arange(9)[None, :]
    assert torch.equal(reachable(cfg, 9, True, 1, through=True), (j <= i) & (j > i - 5))  # 2 + 2 back, and itself
    lifted = reachable(cfg, 9, False, 0)  # the mask lifted: the window on both sides
    assert torch.equal(lifted, (i - j).abs() <= 1)


def test_layer_types_validated_and_kept_hashable():
    cfg = TransformerConfig.from_dict({**BASE, "layer_types": ["sliding", "global"], "sliding_window": 2})
    assert cfg.layer_types == ("sliding", "global") and hash(cfg) and cfg.is_sliding(0) and not cfg.is_sliding(1)
    with pytest.raises(ValueError, match="for each of the 2 layers"):
        TransformerConfig(**BASE, layer_types=("sliding",), sliding_window=2)
    with pytest.raises(ValueError, match="sliding layers need sliding_window"):
        TransformerConfig(**BASE, layer_types=("sliding", "sliding"))


@pytest.mark.parametrize(
    "fields",
    [
        dict(bias=True, o_bias=False),
        dict(bias=False, o_bias=True),
        dict(causal=True, lm_head=True, tie_lm_head=False, positional="rope"),
        dict(positional="learned", position_offset=2),
        dict(head_dim=12, positional="rope", qk_norm=True, norm_kind="rmsnorm"),
        dict(sandwich_norm=True, norm_kind="rmsnorm", norm_offset=1.0, activation="geglu_tanh"),
        dict(first_attn_norm=False, embedding_layer_norm=True),
    ],
)
def test_parameter_count_stays_exact(fields):
    cfg = TransformerConfig(**BASE, **fields)
    model = Transformer(cfg)
    assert cfg.parameter_count() == sum(p.numel() for p in model.parameters())
    attn = model.blocks[0].attn
    assert (attn.w_q.bias is not None) == cfg.bias and (attn.w_o.bias is not None) == cfg.use_o_bias


def test_untied_head_has_its_own_matrix():
    torch.manual_seed(0)
    model = Transformer(TransformerConfig(**BASE, causal=True, lm_head=True, tie_lm_head=False)).eval()
    h = torch.randn(1, 3, 16)
    with torch.no_grad():
        assert torch.allclose(model.lm_logits(h), h @ model.lm_head.weight.t())
        assert not torch.allclose(model.lm_logits(h), h @ model.tok_emb.weight.t())


def test_position_offset_skips_the_first_rows():
    torch.manual_seed(0)
    model = Transformer(TransformerConfig(**BASE, positional="learned", position_offset=2)).eval()
    table = model.pos_enc.embedding.weight
    assert table.shape == (34, 16) and torch.equal(model.pos_enc.table, table[2:])
    x = torch.zeros(1, 4, 16)
    assert torch.equal(model.pos_enc(x)[0], table[2:6])


def _model(**fields) -> Transformer:
    torch.manual_seed(0)
    return Transformer(TransformerConfig(**{**BASE, "norm_kind": "rmsnorm", **fields})).eval()


def _randomise(model: Transformer) -> None:
    torch.manual_seed(1)
    with torch.no_grad():
        for p in model.parameters():
            p.add_(torch.randn_like(p) * 0.2)


def test_qk_norm_normalises_each_heads_q_and_k_before_rope():
    model = _model(positional="rope", qk_norm=True)
    _randomise(model)
    _, trace = run_with_cache(model, torch.randint(0, 50, (1, 6)), kinds=["attn_in", "q"], positions=False)
    attn = model.blocks[0].attn
    x = trace.get("attn_in", 0).clone()
    with torch.no_grad():
        q = attn.w_q(x).view(1, 6, 2, 8).transpose(1, 2)  # (B, H, N, d_k)
        expected = q * torch.rsqrt(q.pow(2).mean(-1, keepdim=True) + model.cfg.layer_norm_eps) * attn.q_norm.weight
    assert torch.allclose(trace.get("q", 0), expected, atol=1e-6)


def test_partial_rotary_leaves_the_rest_of_each_head_alone():
    model = _model(positional="rope", rotary_dim=4)
    ids = torch.randint(0, 50, (1, 6))
    _, on = run_with_cache(model, ids, kinds=["q"])
    _, off = run_with_cache(model, ids, kinds=["q"], positions=False)
    q_on, q_off = on.get("q", 0), off.get("q", 0)  # (B, H, N, d_k = 8)
    assert torch.equal(q_on[..., 4:], q_off[..., 4:]) and not torch.allclose(q_on[..., 1:, :4], q_off[..., 1:, :4])


def test_parallel_residual_feeds_both_sublayers_the_blocks_input():
    model = _model(parallel_residual=True)
    _randomise(model)
    _, trace = run_with_cache(model, torch.randint(0, 50, (1, 5)), kinds=["resid_pre", "resid_mid", "resid_post"])
    block = model.blocks[0]
    x, mid = trace.get("resid_pre", 0), trace.get("resid_mid", 0)
    with torch.no_grad():
        assert torch.allclose(trace.get("resid_post", 0), mid + block.ff(block.ln2(x)), atol=1e-6)


def test_sandwich_norms_and_the_unit_offset():
    model = _model(sandwich_norm=True, norm_offset=1.0)
    norms = [p for n, p in model.named_parameters() if ".ln" in n or n.startswith("ln")]
    assert norms and all(float(p.detach().abs().max()) == 0 for p in norms)  # stored 0: a unit scale (1 + 0)
    _randomise(model)
    _, trace = run_with_cache(model, torch.randint(0, 50, (1, 5)), kinds=["resid_pre", "resid_mid", "attn_out"])
    block = model.blocks[0]
    with torch.no_grad():
        expected = trace.get("resid_pre", 0) + block.ln1_post(trace.get("attn_out", 0))
        h = trace.get("attn_out", 0)
        by_hand = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + 1e-5) * (1 + block.ln1_post.weight)
    assert torch.allclose(trace.get("resid_mid", 0), expected, atol=1e-6)
    assert torch.allclose(block.ln1_post(h), by_hand, atol=1e-6)


def test_attention_scale_softcap_and_geglu():
    ids = torch.randint(0, 50, (1, 5))
    scaled = _model(attn_scale=0.5)
    _, trace = run_with_cache(scaled, ids, kinds=["q", "k", "scores"])
    q, k = trace.get("q", 0), trace.get("k", 0)
    assert torch.allclose(trace.get("scores", 0), q @ k.transpose(-2, -1) * 0.5, atol=1e-6)
    capped = _model(causal=True, lm_head=True, logit_softcap=2.0)
    with torch.no_grad():
        h = capped(ids) * 50
        logits, raw = capped.lm_logits(h), h @ capped.tok_emb.weight.t()
    assert float(raw.abs().max()) > 4 and torch.allclose(logits, 2.0 * torch.tanh(raw / 2.0))
    geglu = _model(activation="geglu_tanh")
    ff = geglu.blocks[0].ff
    x = torch.randn(1, 3, 16)
    with torch.no_grad():
        expected = ff.fc2(torch.nn.functional.gelu(ff.gate(x), approximate="tanh") * ff.fc1(x))
        assert torch.allclose(ff(x), expected)


def test_local_rope_base_and_first_attention_norm():
    model = _model(positional="rope", layer_types=("sliding", "global"), sliding_window=4, rope_local_base=100.0)
    assert model.blocks[0].attn.rope is model.rope_local and model.blocks[1].attn.rope is model.rope
    assert float(model.rope_local.cos[3, 1]) != float(model.rope.cos[3, 1])
    skip = _model(first_attn_norm=False)
    assert isinstance(skip.blocks[0].ln1, torch.nn.Identity) and not isinstance(skip.blocks[1].ln1, torch.nn.Identity)


def test_heads_that_do_not_tile_d_model():
    model = _model(head_dim=12, positional="rope")
    attn = model.blocks[0].attn
    assert attn.w_q.weight.shape == (24, 16) and attn.w_o.weight.shape == (16, 24)
    _, trace = run_with_cache(model, torch.randint(0, 50, (1, 5)), kinds=["q", "z", "attn_out"])
    assert trace.get("q", 0).shape == (1, 2, 5, 12) and trace.get("attn_out", 0).shape == (1, 5, 16)
    with pytest.raises(ValueError, match="must be divisible"):
        TransformerConfig(**{**BASE, "n_heads": 3})
    assert TransformerConfig(**{**BASE, "n_heads": 3, "head_dim": 8}).attn_width == 24
