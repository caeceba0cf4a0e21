import dataclasses
import math

import pytest
import torch

from model.capture import run_with_cache
from model.config import TransformerConfig
from model.positional import rope_angles, sinusoidal_table
from model.transformer import Transformer


def test_classic_sanity_check_shape():
    cfg = TransformerConfig(vocab_size=32000, d_model=256, n_heads=4, n_layers=4)
    model = Transformer(cfg).eval()
    out = model(torch.randint(0, 32000, (2, 64)))
    assert out.shape == (2, 64, 256)
    assert sum(p.numel() for p in model.parameters()) == cfg.parameter_count()


@pytest.mark.parametrize("positional", ["sinusoidal", "learned", "rope", "none"])
@pytest.mark.parametrize("norm", ["pre", "post"])
def test_every_positional_kind_and_norm(positional, norm, ids):
    cfg = TransformerConfig(
        vocab_size=64,
        d_model=32,
        n_heads=4,
        n_layers=2,
        d_ff=64,
        max_seq_len=16,
        positional=positional,
        norm=norm,
        dropout=0.0,
    )
    model = Transformer(cfg).eval()
    out, trace = run_with_cache(model, ids, kinds=["pattern", "q"])
    assert out.shape == (2, 10, 32)
    assert trace.get("pattern", 1).shape == (2, 4, 10, 10)
    assert trace.get("q", 0).shape == (2, 4, 10, 8)
    assert torch.isfinite(out).all()


def test_sinusoidal_matches_formula():
    table = sinusoidal_table(50, 16)
    for pos in (0, 1, 7, 49):
        for i in range(8):
            angle = pos / 10000 ** (2 * i / 16)
            assert table[pos, 2 * i].item() == pytest.approx(math.sin(angle), abs=1e-6)
            assert table[pos, 2 * i + 1].item() == pytest.approx(math.cos(angle), abs=1e-6)


def test_rope_preserves_norm_and_encodes_relative_position():
    from model.positional import RotaryEmbedding

    rope = RotaryEmbedding(8, 32)
    x = torch.randn(1, 1, 1, 8).expand(1, 1, 20, 8)  # same vector at every position
    rx = rope(x)
    torch.testing.assert_close(rx.norm(dim=-1), x.norm(dim=-1))
    dots = rx[0, 0] @ rx[0, 0].t()  # depends only on the distance between positions
    torch.testing.assert_close(dots[3, 5], dots[10, 12])
    assert rope_angles(4, 8)[1, 0].item() == pytest.approx(1.0)


def test_causal_option_blocks_future(tiny_cfg, ids):
    model = Transformer(dataclasses.replace(tiny_cfg, causal=True)).eval()
    _, trace = run_with_cache(model, ids, kinds=["pattern"])
    assert torch.all(trace.get("pattern", 0).triu(1) == 0)
    # per-call override switches it off again
    _, trace = run_with_cache(model, ids, kinds=["pattern"], causal=False)
    upper = torch.ones(10, 10, dtype=torch.bool).triu(1)
    assert torch.all(trace.get("pattern", 0)[..., upper] > 0)


def test_padding_mask_zero_weight_and_does_not_change_real_tokens(tiny_model):
    ids = torch.tensor([[5, 6, 7, 8, 0, 0]])
    mask = torch.tensor([[1, 1, 1, 1, 0, 0]])
    out, trace = run_with_cache(tiny_model, ids, mask, kinds=["pattern"])
    for layer in (0, 1):
        assert torch.all(trace.get("pattern", layer)[..., 4:] == 0)
    alone, _ = run_with_cache(tiny_model, ids[:, :4])
    torch.testing.assert_close(out[:, :4], alone, atol=1e-5, rtol=0)


def test_permutation_equivariance_without_positions():
    cfg = TransformerConfig(
        vocab_size=64, d_model=32, n_heads=4, n_layers=2, d_ff=64, max_seq_len=16, positional="none", dropout=0.0
    )
    torch.manual_seed(3)
    model = Transformer(cfg).eval()
    ids = torch.tensor([[3, 9, 14, 27, 40, 51, 60]])
    perm = torch.tensor([4, 0, 6, 2, 1, 5, 3])
    _, a = run_with_cache(model, ids, kinds=["pattern"])
    _, b = run_with_cache(model, ids[:, perm], kinds=["pattern"])
    for layer in (0, 1):
        pa = a.get("pattern", layer)[0]
        torch.testing.assert_close(b.get("pattern", layer)[0], pa[:, perm][:, :, perm], atol=1e-6, rtol=0)
    # with sinusoidal positions the same shuffle is no longer equivariant
    model = Transformer(dataclasses.replace(cfg, positional="sinusoidal")).eval()
    _, a = run_with_cache(model, ids, kinds=["pattern"])
    _, b = run_with_cache(model, ids[:, perm], kinds=["pattern"])
    assert (b.get("pattern", 1)[0] - a.get("pattern", 1)[0][:, perm][:, :, perm]).abs().max() > 1e-3


def test_weight_init_recipe():
    cfg = TransformerConfig(vocab_size=2000, d_model=64, n_heads=4, n_layers=1, d_ff=128, bias=True)
    model = Transformer(cfg)
    assert model.tok_emb.weight.std().item() == pytest.approx(64**-0.5, rel=0.05)
    bound = math.sqrt(6 / (64 + 64))
    assert model.blocks[0].attn.w_q.weight.abs().max().item() <= bound
    assert torch.all(model.blocks[0].attn.w_q.bias == 0)


def test_embedding_scaling_is_configurable(tiny_cfg):
    ids = torch.tensor([[1, 2, 3]])
    a = Transformer(dataclasses.replace(tiny_cfg, positional="none"))
    b = Transformer(dataclasses.replace(tiny_cfg, positional="none", scale_embeddings=False))
    b.load_state_dict(a.state_dict())
    torch.testing.assert_close(a.embed(ids), b.embed(ids) * math.sqrt(32))


def test_too_long_input_is_refused(tiny_model):
    with pytest.raises(ValueError, match="longer than max_seq_len"):
        tiny_model(torch.zeros(1, 33, dtype=torch.long))


@pytest.mark.parametrize(
    "changes, message",
    [
        ({"d_model": 30, "n_heads": 4}, "divisible"),
        ({"d_model": 36, "n_heads": 4, "positional": "rope"}, "RoPE"),
        ({"norm": "middle"}, "norm"),
        ({"positional": "alibi"}, "positional"),
        ({"activation": "swish"}, "activation"),
        ({"dropout": 1.5}, "dropout"),
        ({"n_layers": 0}, "at least 1"),
        ({"vocab_size": 10**9}, "parameters"),
        ({"d_model": "256"}, "integer"),
    ],
)
def test_invalid_configs_say_how_to_fix(changes, message):
    with pytest.raises(ValueError, match=message):
        TransformerConfig(**changes)


def test_config_from_dict_rejects_unknown_and_wrong_types():
    with pytest.raises(ValueError, match="unknown config keys: colour"):
        TransformerConfig.from_dict({"colour": "red"})
    with pytest.raises(ValueError, match="true or false"):
        TransformerConfig.from_dict({"causal": "yes"})
    cfg = TransformerConfig(d_model=64, n_heads=8)
    assert TransformerConfig.from_dict(cfg.to_dict()) == cfg


@pytest.mark.parametrize("activation", ["swiglu", "gelu"])
def test_a_long_input_goes_through_the_feed_forward_a_block_of_rows_at_a_time(activation):
    """Its hidden layer's temporaries stay under BLOCK_BYTES (d_ff 4,096 in float32: 512 rows of 16 kB), the
    output as one product over every row gives it; a hook on the hidden layer or a gradient sees it whole."""
    from model.feedforward import BLOCK_BYTES

    torch.manual_seed(0)
    cfg = TransformerConfig(vocab_size=64, d_model=32, n_heads=4, n_layers=1, d_ff=4096, activation=activation)
    ff = Transformer(cfg).eval().blocks[0].ff
    seen = []
    ff.fc1.register_forward_hook(lambda _m, _i, out: seen.append(out.shape[1]))
    x = torch.randn(2, 1500, 32)
    with torch.no_grad():
        out = ff(x)
        assert seen == [256, 256, 256, 256, 256, 220]  # two batch rows: 2 × 4,096 × 4 B a row, 8 MiB in 256 rows
        assert max(seen) * 2 * 4096 * 4 <= BLOCK_BYTES
        seen.clear()
        torch.testing.assert_close(out, ff._rows(x))
        handle = ff.hook_hidden.register_forward_hook(lambda _m, _i, out: None)
        torch.testing.assert_close(ff(x), out)
        handle.remove()
        assert seen == [1500, 1500]
    seen.clear()
    ff(x)
    assert seen == [1500]


def test_a_fused_causal_pass_builds_no_mask_unless_a_layer_slides(monkeypatch):
    """The fused kernel skips the causal triangle itself: no (N, N) mask is made for it (64 MB at 8,192 tokens);
    a sliding layer still reads its window's."""
    import model.masks

    built = []
    real = model.masks.layer_masks
    monkeypatch.setattr(model.masks, "layer_masks", lambda *a, **k: built.append(1) or real(*a, **k))
    torch.manual_seed(0)
    ids = torch.randint(0, 64, (1, 40))
    for types, expected in (((), 0), (("sliding", "global"), 1)):
        cfg = TransformerConfig(vocab_size=64, d_model=32, n_heads=4, n_layers=2, d_ff=64, causal=True,
                                positional="rope", layer_types=types, sliding_window=8 if types else 0)  # fmt: skip
        model_ = Transformer(cfg).eval()
        built.clear()
        with torch.no_grad():
            fused = model_(ids, fused=True)
        assert len(built) == expected, types
        with torch.no_grad():
            torch.testing.assert_close(fused, model_(ids), rtol=1e-5, atol=1e-5)
