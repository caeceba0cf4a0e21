"""The position-wise feed-forward sublayer: Linear -> activation -> Linear, or gated (SwiGLU, GeGLU)."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from model.config import TransformerConfig
from model.hooks import HookPoint

_TANH = {"geglu_tanh": "tanh", "geglu": "none"}


class FeedForward(nn.Module):
    """Position-wise Linear -> activation -> Linear; SwiGLU (Shazeer, 2020) gates the hidden layer:
    fc2(silu(gate(x)) · fc1(x))."""

    def __init__(self, cfg: TransformerConfig) -> None:
        super().__init__()
        self.fc1 = nn.Linear(cfg.d_model, cfg.d_ff, bias=cfg.ff_bias)  # "up" in LLaMA
        self.fc2 = nn.Linear(cfg.d_ff, cfg.d_model, bias=cfg.ff_bias)  # "down"
        self.gate = nn.Linear(cfg.d_model, cfg.d_ff, bias=cfg.ff_bias) if cfg.gated else None
        self.activation = cfg.activation
        self.hook_hidden = HookPoint()  # (B, N, d_ff), after the activation (and the gate): what fc2 reads

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.fc1(x)  # (B, N, d_ff)
        if self.gate is not None:  # SwiGLU: silu(gate) · up; GeGLU (Gemma, ModernBERT): gelu(gate) · up
            g = self.gate(x)
            act = F.silu(g) if self.activation == "swiglu" else F.gelu(g, approximate=_TANH[self.activation])
            h = act * h
        elif self.activation == "relu":
            h = F.relu(h)
        else:
            h = F.gelu(h, approximate="tanh" if self.activation == "gelu_tanh" else "none")
        return self.fc2(self.hook_hidden(h))  # (B, N, d_model)
