"""The Q / K / V page's step by step recomputes what each family's model did: the scores a model adds to q·k for
position (T5's and MPNet's relative bias, DeBERTa's c2p + p2c terms) and gpt-oss's learned sink are steps of
their own. Without them the page drew weights 0.9 away from the model's on the T5 and gpt-oss fixtures (and its own
check under the panels said so)."""

from __future__ import annotations

import functools

import numpy as np
import pytest

from model.analysis.steps import explain_query, observed_head_steps
from model.io.catalog import ModelSpec, load
from model.observe import head_weights, observe
from tests.hf_fixtures import FIXTURES

TEXT = "the cat sat on the mat because it was tired"
#: position inside the scores, a learned sink, and plain ones (a soft cap and sliding windows, grouped queries)
FAMILIES = ["../hf_encdec/t5", "mpnet", "deberta-v2", "gpt_oss", "gemma2", "llama"]


@functools.cache
def observed(folder: str):
    loaded = load(ModelSpec("folder", path=str(FIXTURES / folder)))
    return loaded.model, observe(loaded.model, loaded.tokenizer, TEXT)


@pytest.mark.parametrize("folder", FAMILIES)
def test_every_heads_steps_end_in_the_models_own_weights_and_output(folder):
    model, obs = observed(folder)
    cfg = model.cfg
    for layer in range(obs.n_layers):
        for head in range(obs.n_heads):
            weights = head_weights(model, layer, head)
            steps = observed_head_steps(obs, weights, layer, head)
            np.testing.assert_allclose(steps.pattern, obs.patterns[layer, head], atol=1e-6)
            np.testing.assert_allclose(steps.z, obs.z[layer, head], atol=1e-5)
            assert (steps.position is not None) == bool(cfg.relative_bias or cfg.disentangled)
            assert (steps.sink is not None) == cfg.attn_sinks
            if steps.sink is not None:
                np.testing.assert_allclose(steps.sink, obs.sink[layer, head], atol=1e-6)
                np.testing.assert_allclose(steps.pattern.sum(-1) + steps.sink, 1.0, atol=1e-6)
            for query in (0, obs.n_tokens // 2, obs.n_tokens - 1):
                qe = explain_query(
                    steps.q, steps.k, query, obs.score_matrix(layer, head)[query], obs.options.scale,
                    obs.score_factor, obs.softcap, None if steps.position is None else steps.position[query],
                    weights["sink"],
                )  # fmt: skip
                np.testing.assert_allclose(qe.weights, obs.patterns[layer, head, query], atol=1e-6)
                if qe.sink is not None:
                    assert qe.sink == pytest.approx(float(obs.sink[layer, head, query]), abs=1e-6)
        np.testing.assert_allclose(steps.out, obs.attn_out[layer], atol=1e-5)


def test_the_position_term_is_the_models_own_bias():
    """T5's term is its learned bias per head and relative distance (Transformer.position_bias), and it is what
    moves the weights: without it the weights miss the model's by more than 0.1."""
    import torch

    model, obs = observed("../hf_encdec/t5")
    n = obs.n_tokens
    bias = model.block_inputs(n)["bias"][0].detach().numpy()  # (H, N, N)
    worst = 0.0
    for head in range(obs.n_heads):
        steps = observed_head_steps(obs, head_weights(model, 0, head), 0, head)
        seen = np.isfinite(steps.masked)
        np.testing.assert_allclose(steps.position[seen], bias[head][seen], atol=1e-5)
        without = torch.softmax(torch.from_numpy(np.where(seen, steps.scaled, -np.inf)), -1).numpy()
        worst = max(worst, float(np.abs(without - obs.patterns[0, head]).max()))
    assert worst > 0.1
