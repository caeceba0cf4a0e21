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
