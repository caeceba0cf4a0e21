import math

import pytest
import torch
import torch.nn.functional as F

from model.analysis.metrics import entropy
from model.attention import MultiHeadAttention, attention_scores, masked_softmax, scaled_dot_product_attention


def rand(*shape, seed=0):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))


def test_rows_sum_to_one():
    q, k, v = rand(2, 3, 5, 8, seed=1), rand(2, 3, 7, 8, seed=2), rand(2, 3, 7, 8, seed=3)
    out, w = scaled_dot_product_attention(q, k, v)
    assert out.shape == (2, 3, 5, 8) and w.shape == (2, 3, 5, 7)
    torch.testing.assert_close(w.sum(-1), torch.ones(2, 3, 5))


def test_scores_are_scaled_by_sqrt_dk():
    q, k = rand(1, 1, 4, 16, seed=1), rand(1, 1, 4, 16, seed=2)
    torch.testing.assert_close(attention_scores(q, k) * 4.0, attention_scores(q, k, scale=False))


def test_parity_with_torch_sdpa_and_mask():
    q, k, v = rand(2, 4, 6, 8, seed=1), rand(2, 4, 6, 8, seed=2), rand(2, 4, 6, 8, seed=3)
    mask = torch.ones(2, 1, 1, 6, dtype=torch.bool)
    mask[1, ..., 4:] = False
    ours, _ = scaled_dot_product_attention(q, k, v, mask=mask)
    ref = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    torch.testing.assert_close(ours, ref, atol=1e-5, rtol=0)


def test_causal_mask_zero_above_diagonal():
    q = rand(1, 2, 5, 4)
    causal = torch.ones(5, 5).tril()
    _, w = scaled_dot_product_attention(q, q, q, mask=causal)
    assert torch.all(w.triu(1) == 0)
    torch.testing.assert_close(w.sum(-1), torch.ones(1, 2, 5))


def test_padded_keys_get_zero_weight():
    q = rand(1, 2, 4, 4)
    mask = torch.tensor([1, 1, 0, 0])[None, None, None, :]
    _, w = scaled_dot_product_attention(q, q, q, mask=mask)
    assert torch.all(w[..., 2:] == 0)


def test_fully_masked_rows_are_finite_zero():
    q = rand(1, 1, 3, 4)
    mask = torch.zeros(1, 1, 3, 3)
    mask[..., 0, :] = 1  # only the first query may attend
    out, w = scaled_dot_product_attention(q, q, q, mask=mask)
    assert torch.isfinite(out).all() and torch.isfinite(w).all()
    assert torch.all(w[..., 1:, :] == 0)
    assert masked_softmax(torch.full((2, 3), float("-inf"))).eq(0).all()


def test_parity_with_torch_multihead_attention():
    torch.manual_seed(0)
    d, h = 32, 4
    ours = MultiHeadAttention(d, h, bias=True).eval()
    ref = torch.nn.MultiheadAttention(d, h, bias=True, batch_first=True).eval()
    with torch.no_grad():
        ref.in_proj_weight.copy_(torch.cat([ours.w_q.weight, ours.w_k.weight, ours.w_v.weight]))
        ref.in_proj_bias.copy_(torch.cat([ours.w_q.bias, ours.w_k.bias, ours.w_v.bias]))
        ref.out_proj.weight.copy_(ours.w_o.weight)
        ref.out_proj.bias.copy_(ours.w_o.bias)
    x, ctx = rand(2, 5, d, seed=4), rand(2, 7, d, seed=5)
    pad = torch.tensor([[True] * 7, [True] * 5 + [False] * 2])
    with torch.no_grad():
        expected, weights = ref(x, ctx, ctx, key_padding_mask=~pad, average_attn_weights=False)
        got = ours(x, context=ctx, mask=pad[:, None, None, :])
    torch.testing.assert_close(got, expected, atol=1e-5, rtol=0)
    # and the pattern seen by the hook equals torch's weights
    seen = {}
    handle = ours.hook_pattern.register_forward_hook(lambda m, i, o: seen.setdefault("p", o))
    try:
        with torch.no_grad():
            ours(x, context=ctx, mask=pad[:, None, None, :])
    finally:
        handle.remove()
    torch.testing.assert_close(seen["p"], weights, atol=1e-5, rtol=0)


def test_no_scaling_saturates_the_softmax():
    """At large d_k, unscaled dot products push softmax towards one-hot: lower entropy."""
    q, k = rand(4, 8, 32, 256, seed=7), rand(4, 8, 32, 256, seed=8)
    with_scale = entropy(masked_softmax(attention_scores(q, k, scale=True)).numpy()).mean()
    without = entropy(masked_softmax(attention_scores(q, k, scale=False)).numpy()).mean()
    assert without < 0.5 * with_scale
    assert with_scale > 0.5 * math.log(32)  # scaled attention stays spread out


def test_mha_rejects_bad_head_count():
    with pytest.raises(ValueError, match="divisible"):
        MultiHeadAttention(30, 4)
