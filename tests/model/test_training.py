"""Training helpers that decide what ships: the float16 check of a ``--half`` checkpoint."""

from types import SimpleNamespace

import torch

from model.config import TransformerConfig
from model.train.mlm import float16_error
from model.transformer import Transformer


class WordTokenizer:
    """Just enough tokenizer for float16_error: one id per character."""

    def encode(self, text, max_len=128):
        return SimpleNamespace(ids=[1 + ord(c) % 40 for c in text[:max_len]])


def test_float16_error_measures_the_rounding_of_the_weights():
    torch.manual_seed(0)
    model = Transformer(TransformerConfig(vocab_size=48, d_model=32, n_heads=4, n_layers=2, d_ff=64)).eval()
    err = float16_error(model, WordTokenizer(), ["the cat sat on the mat", "a dog ran"])
    assert 0 < err["hidden"] < 1e-2 and 0 < err["pattern"] < 1e-3 and err["hidden_scale"] > 0.5
    with torch.no_grad():  # weights that float16 cannot hold: the check sees it
        model.blocks[0].attn.w_q.weight.add_(1e-4 * torch.randn_like(model.blocks[0].attn.w_q.weight)).mul_(300)
    assert float16_error(model, WordTokenizer(), ["the cat sat on the mat"])["pattern"] > err["pattern"]
