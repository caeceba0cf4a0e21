"""Lesson experiments that run extra forward passes: permutation, padding, masked predictions; the
observation's numpy boundary (head weights, positional tables)."""

import dataclasses

import numpy as np
import pytest
import torch

from model.config import TransformerConfig
from model.experiments import masked_predictions, padded_batch, permutation_check, with_mask
from model.io.catalog import ModelSpec, load
from model.io.tokenizer import Tokenizer
from model.observe import position_table
from model.transformer import Transformer


def test_permutation_lab(tiny_cfg):
    torch.manual_seed(1)
    model = Transformer(tiny_cfg).eval()
    ids, special = [2, 10, 11, 12, 13, 14, 3], [True] + [False] * 5 + [True]
    off = permutation_check(model, ids, special, positions=False, layer=1)
    assert sorted(off["perm"]) == list(range(7)) and off["perm"][0] == 0 and off["perm"][-1] == 6
    assert off["max_diff"] < 1e-5
    on = permutation_check(model, ids, special, positions=True, layer=1)
    assert on["max_diff"] > 1e-3


def test_a_causal_mask_tells_the_orders_apart_without_positions(tiny_cfg):
    """A causal model's permutation lab ran with its mask and the page said the two patterns were equal; they
    differ by the mask itself. Lifted, the same model is blind to order again."""
    torch.manual_seed(1)
    model = Transformer(dataclasses.replace(tiny_cfg, causal=True)).eval()
    ids, special = [2, 10, 11, 12, 13, 14, 3], [True] + [False] * 5 + [True]
    assert permutation_check(model, ids, special, positions=False, layer=1)["max_diff"] > 0.05
    assert permutation_check(model, ids, special, positions=False, layer=1, causal=False)["max_diff"] < 1e-5
    forced = Transformer(tiny_cfg).eval()  # a bidirectional model with the sidebar's mask forced on
    assert permutation_check(forced, ids, special, positions=False, layer=1, causal=True)["max_diff"] > 0.05


def test_padded_batch_zero_weight_on_padding(tiny_model):
    res = padded_batch(tiny_model, [2, 5, 6, 7, 8, 3], [2, 9, 3], pad_id=0, layer=0)
    assert res["patterns"].shape == (2, 4, 6, 6)
    assert np.all(res["patterns"][1][..., 3:] == 0)
    assert res["padding_effect"] < 1e-5
    np.testing.assert_array_equal(res["attention_mask"][1], [1, 1, 1, 0, 0, 0])


def test_positional_tables(tiny_cfg):
    for kind, width in (("sinusoidal", 32), ("learned", 32), ("rope", 4), ("none", 0)):
        model = Transformer(dataclasses.replace(tiny_cfg, positional=kind))
        got, table = position_table(model, 10)
        assert got == kind and table.shape == (10, width)


def test_masked_predictions_on_bundled_model():
    m = load(ModelSpec("bundled"))
    tok: Tokenizer = m.tokenizer
    enc = tok.encode("and god said , let there be [MASK] : and there was light .")
    pos = enc.tokens.index("[MASK]")
    (pred,) = masked_predictions(m.model, torch.tensor([enc.ids]), [pos], tok.id_to_token, k=5)
    assert len(pred.tokens) == 5 and list(pred.probs) == sorted(pred.probs, reverse=True)
    assert 0 < sum(pred.probs) <= 1.0 + 1e-6
    with pytest.raises(ValueError, match="no masked-language-model head"):
        masked_predictions(
            Transformer(TransformerConfig(vocab_size=10, d_model=8, n_heads=2, n_layers=1, d_ff=8)),
            torch.tensor([[1]]),
            [0],
            str,
        )


def test_with_mask_replaces_only_the_chosen_positions():
    assert with_mask([2, 10, 11, 3], [1, 2], 4) == (2, 4, 4, 3)
    assert with_mask((5,), [], 4) == (5,)
