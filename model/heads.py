"""The heads on top of the stream that are modules of their own: a masked-language-model head (the next-token head
is the token embeddings or one matrix, in :meth:`model.transformer.Transformer.lm_logits`)."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from model.config import TransformerConfig


class MLMHead(nn.Module):
    """A masked-language-model head: dense -> activation -> LayerNorm -> vocabulary logits, the vocabulary matrix tied
    to the token embeddings (BERT, RoBERTa, DistilBERT, ModernBERT, ELECTRA's generator) or its own
    (``tie_mlm_head=False``), with a bias per token. A head stored without a dense or norm bias reads zeros there."""

    def __init__(self, cfg: TransformerConfig) -> None:
        super().__init__()
        e = cfg.embed_width  # narrower embeddings (ELECTRA, ALBERT): the head narrows back to their width
        self.dense = nn.Linear(cfg.d_model, e)
        self.act = cfg.mlm_activation
        self.ln = nn.LayerNorm(e, eps=cfg.layer_norm_eps)
        self.decoder = None if cfg.tie_mlm_head else nn.Linear(e, cfg.vocab_size, bias=False)  # (V, E)
        self.bias = nn.Parameter(torch.zeros(cfg.vocab_size))

    def forward(self, h: torch.Tensor, embedding: torch.Tensor) -> torch.Tensor:
        """h: (B, N, d_model), embedding: (V, E) -> logits (B, N, V); E = d_model unless embeddings are narrower."""
        x = self.dense(h)
        x = F.relu(x) if self.act == "relu" else F.gelu(x, approximate="tanh" if self.act == "gelu_tanh" else "none")
        w = embedding if self.decoder is None else self.decoder.weight  # (V, E)
        return self.ln(x) @ w.t() + self.bias
