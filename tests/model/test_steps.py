"""Known-answer checks for the analysis maths on captured arrays: steps, flow, norms, projection, scaling."""

import dataclasses

import numpy as np
import pytest
import torch

from model.analysis.flow import attention_flow, attention_rollout
from model.analysis.norms import relative_change, value_contributions
from model.analysis.projection import pca_2d
from model.analysis.scaling import scaling_demo
from model.analysis.steps import explain_query, observed_head_steps, softmax_rows
from model.io.tokenizer import Encoded
from model.observe import Options, head_weights, observe
from model.transformer import Transformer


class FakeTokenizer:
    """Whitespace tokenizer over a fixed vocabulary (keeps these tests independent of assets)."""

    unk_token = None  # every word has an id

    def encode(self, text, max_len=None):

        words = text.split()[: (max_len or 10**6) - 2]
        ids = (2, *(4 + (sum(map(ord, w)) % 50) for w in words), 3)
        toks = ("[CLS]", *words, "[SEP]")
        return Encoded(
            ids, toks, tuple((0, 0) for _ in ids), (True, *(False for _ in words), True), False, len(ids), text
        )


@pytest.fixture(params=["pre", "post"])
def setup(request, tiny_cfg):
    torch.manual_seed(0)
    cfg = dataclasses.replace(tiny_cfg, norm=request.param, bias=True)
    model = Transformer(cfg).eval()
    return model, observe(model, FakeTokenizer(), "the cat sat on the mat", Options())


def test_head_steps_recompute_what_the_model_did(setup):
    model, a = setup
    for layer in range(2):
        for head in range(4):
            w = head_weights(model, layer, head)
            steps = observed_head_steps(a, w, layer, head)
            np.testing.assert_allclose(steps.pattern, a.patterns[layer, head], atol=1e-6)
            np.testing.assert_allclose(steps.z, a.z[layer, head], atol=1e-5)
            np.testing.assert_allclose(steps.out, a.attn_out[layer], atol=1e-5)
            np.testing.assert_allclose(
                steps.x @ w["w_q"] + model.blocks[layer].attn.w_q.bias.detach().numpy()[head * 8 : (head + 1) * 8],
                steps.q,
                atol=1e-5,
            )


def test_explain_query_reproduces_the_row(setup):
    _, a = setup
    qe = explain_query(a.q[1, 2], a.k[1, 2], 3, a.score_matrix(1, 2)[3])
    np.testing.assert_allclose(qe.products.sum(-1), qe.scores, rtol=1e-5)
    np.testing.assert_allclose(qe.weights, a.patterns[1, 2][3], atol=1e-6)
    np.testing.assert_allclose(qe.scaled, qe.scores / np.sqrt(8), rtol=1e-5)


def test_softmax_rows_handles_masked_rows():
    s = np.array([[0.0, -np.inf], [-np.inf, -np.inf]])
    np.testing.assert_array_equal(softmax_rows(s), [[1.0, 0.0], [0.0, 0.0]])


def test_rollout_of_identity_is_identity_and_rows_sum_to_one():
    eye = np.broadcast_to(np.eye(5), (3, 2, 5, 5))
    np.testing.assert_allclose(attention_rollout(eye), np.eye(5), atol=1e-7)
    rand = np.random.default_rng(0).dirichlet(np.ones(5), (3, 2, 5))
    np.testing.assert_allclose(attention_rollout(rand).sum(-1), np.ones(5), rtol=1e-5)
    # one layer, residual 0: rollout is just the head mean
    np.testing.assert_allclose(attention_rollout(rand[:1], residual=0.0), rand[0].mean(0), rtol=1e-5)


def test_attention_flow_identity_and_limit():
    eye = np.broadcast_to(np.eye(4), (2, 3, 4, 4))
    np.testing.assert_allclose(attention_flow(eye), np.eye(4), atol=1e-6)
    with pytest.raises(ValueError, match="limited to 32 tokens"):
        attention_flow(np.ones((1, 1, 40, 40)) / 40)


def test_pca_of_a_known_set():
    t = np.linspace(-1, 1, 9)
    pts = np.column_stack([3 * t, 4 * t, np.zeros(9)]) + 7  # a line along (3, 4, 0)
    coords, ratio = pca_2d(pts)
    assert ratio[0] == pytest.approx(1.0) and ratio[1] == pytest.approx(0.0, abs=1e-12)
    np.testing.assert_allclose(np.abs(coords[:, 0]), 5 * np.abs(t), atol=1e-9)
    np.testing.assert_allclose(coords[:, 1], 0, atol=1e-9)


def test_value_contributions():
    pattern = np.array([[0.5, 0.5], [1.0, 0.0]])
    v = np.array([[1.0, 0.0], [0.0, 0.0]])  # the second token's value vector is zero
    contrib, norms = value_contributions(pattern, v, np.eye(2))
    np.testing.assert_allclose(norms, [1.0, 0.0])
    np.testing.assert_allclose(contrib, [[0.5, 0.0], [1.0, 0.0]])


def test_relative_change():
    before = np.array([[3.0, 4.0], [1.0, 0.0]])
    after = np.array([[3.0, 4.0], [1.0, 1.0]])
    np.testing.assert_allclose(relative_change(before, after), [0.0, 1.0])


def test_scaling_demo_moves_the_right_way():
    demo = scaling_demo(d_ks=(4, 64, 1024), samples=16)
    unscaled, scaled = demo["entropy_unscaled"], demo["entropy_scaled"]
    assert np.all(np.diff(unscaled) < 0)  # saturates as d_k grows
    assert np.ptp(scaled) < 0.1 and np.all(scaled > unscaled)
    assert np.all(np.diff(demo["max_weight_unscaled"]) > 0)
    assert demo["gradient_unscaled"][-1] < 0.5 * demo["gradient_scaled"][-1]
