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
        self.dense = nn.Linear(cfg.d_model, cfg.d_model)
        self.act = cfg.mlm_activation
        self.ln = nn.LayerNorm(cfg.d_model, eps=cfg.layer_norm_eps)
        self.decoder = None if cfg.tie_mlm_head else nn.Linear(cfg.d_model, cfg.vocab_size, bias=False)  # (V, d)
        self.bias = nn.Parameter(torch.zeros(cfg.vocab_size))

    def forward(self, h: torch.Tensor, embedding: torch.Tensor) -> torch.Tensor:
        """h: (B, N, d_model), embedding: (V, d_model) -> logits (B, N, V)."""
        x = self.dense(h)
        x = F.relu(x) if self.act == "relu" else F.gelu(x, approximate="tanh" if self.act == "gelu_tanh" else "none")
        w = embedding if self.decoder is None else self.decoder.weight  # (V, d_model)
        return self.ln(x) @ w.t() + self.bias
