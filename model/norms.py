"""The normalisation layers: LayerNorm (torch's) and RMSNorm, chosen by the config."""

from __future__ import annotations

import torch
from torch import nn

from model.config import TransformerConfig


class RMSNorm(nn.Module):
    """x / sqrt(mean(x²) + eps) · weight (Zhang & Sennrich, 2019): LayerNorm without centring or bias.

    Computed in float32 whatever the input dtype, as LLaMA does: the residual stream of a decoder reaches
    ~1e4, and squaring that in float16 overflows."""

    def __init__(self, d_model: int, eps: float = 1e-6, offset: float = 0.0) -> None:
        super().__init__()
        self.eps = eps
        self.offset = offset  # Gemma stores weight − 1 and scales by (1 + weight), in float32
        self.weight = nn.Parameter(torch.full((d_model,), 1.0 - offset))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = x if x.dtype == torch.float64 else x.float()  # at least float32 (a float64 model stays exact)
        h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + self.eps)  # (B, N, d_model)
        if self.offset:
            return (h * (self.offset + self.weight.to(h.dtype))).to(x.dtype)
        return self.weight * h.to(x.dtype)


def gain(norm: nn.Module) -> torch.Tensor:
    """(width,) float64, detached: what a norm multiplies the normalised stream by — LayerNorm's weight, RMSNorm's
    offset + weight (Gemma stores weight − 1) — for analyses that treat the norm as a linear map."""
    w = norm.weight.detach().double()
    return w + norm.offset if isinstance(norm, RMSNorm) else w


def make_norm(cfg: TransformerConfig, width: int | None = None) -> nn.Module:
    """The config's normalisation layer over d_model (or ``width``: d_k for QK-norm)."""
    width = width or cfg.d_model
    if cfg.norm_kind == "rmsnorm":
        return RMSNorm(width, eps=cfg.layer_norm_eps, offset=cfg.norm_offset)
    return nn.LayerNorm(width, eps=cfg.layer_norm_eps)
