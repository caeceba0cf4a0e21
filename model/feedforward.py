"""The position-wise feed-forward sublayer: Linear -> activation -> Linear, or gated (SwiGLU, GeGLU)."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from model.config import TransformerConfig
from model.hooks import HookPoint

_TANH = {"geglu_tanh": "tanh", "geglu": "none"}
#: the most bytes one of the hidden layer's temporaries takes when a long input goes a block of rows at a time
BLOCK_BYTES = 8 * 2**20


def gated(kind: str, g: torch.Tensor, up: torch.Tensor, limit: float = 0.0, alpha: float = 1.702) -> torch.Tensor:
    """A gated unit's hidden layer from the gate's and the up projection's outputs (…, d_ff): SwiGLU silu(g)·up,
    GeGLU gelu(g)·up, or gpt-oss's clamped form (g ≤ limit, |up| ≤ limit) g·σ(alpha·g)·(up + 1)."""
    if kind == "swiglu_oss":
        g, up = g.clamp(max=limit), up.clamp(min=-limit, max=limit)
        return g * torch.sigmoid(g * alpha) * (up + 1)
    act = F.silu(g) if kind == "swiglu" else F.gelu(g, approximate=_TANH[kind])
    return act * up


class FeedForward(nn.Module):
    """Position-wise Linear -> activation -> Linear; SwiGLU (Shazeer, 2020) gates the hidden layer:
    fc2(silu(gate(x)) · fc1(x))."""

    def __init__(self, cfg: TransformerConfig) -> None:
        super().__init__()
        self.fc1 = nn.Linear(cfg.d_model, cfg.d_ff, bias=cfg.ff_bias)  # "up" in LLaMA
        self.fc2 = nn.Linear(cfg.d_ff, cfg.d_model, bias=cfg.ff_bias)  # "down"
        self.gate = nn.Linear(cfg.d_model, cfg.d_ff, bias=cfg.ff_bias) if cfg.gated else None
        self.activation = cfg.activation
        self.limit, self.alpha = cfg.swiglu_limit, cfg.swiglu_alpha
        self.hook_hidden = HookPoint()  # (B, N, d_ff), after the activation (and the gate): what fc2 reads

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """x (B, N, d_model) -> (B, N, d_model). A long input's rows go a block at a time when nothing needs the
        whole hidden layer at once (no gradient, no hook on it): its temporaries (SmolLM2 at 8,192 tokens: four
        of 50 MB) stay under :data:`BLOCK_BYTES` each."""
        if x.dim() < 2 or torch.is_grad_enabled() or self.hook_hidden._forward_hooks:
            return self._rows(x)
        per_row = self.fc1.out_features * x.element_size() * x[..., 0, 0].numel()  # one row of h, every batch
        rows = 1 << max(BLOCK_BYTES // per_row, 1).bit_length() - 1  # a power of two: the same sums as one product
        if x.shape[-2] <= rows:
            return self._rows(x)
        out = x.new_empty((*x.shape[:-1], self.fc2.out_features))  # (B, N, d_model)
        for a in range(0, x.shape[-2], rows):
            out[..., a : a + rows, :] = self._rows(x[..., a : a + rows, :])
        return out

    def _rows(self, x: torch.Tensor) -> torch.Tensor:
        h = self.fc1(x)  # (B, N, d_ff)
        if self.gate is not None:  # SwiGLU: silu(gate) · up; GeGLU (Gemma, ModernBERT): gelu(gate) · up
            h = gated(self.activation, self.gate(x), h, self.limit, self.alpha)
        elif self.activation == "relu":
            h = F.relu(h)
        else:
            h = F.gelu(h, approximate="tanh" if self.activation == "gelu_tanh" else "none")
        return self.fc2(self.hook_hidden(h))  # (B, N, d_model)
