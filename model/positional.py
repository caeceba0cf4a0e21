"""Positional encodings: sinusoidal, learned absolute, rotary (RoPE), and none."""

from __future__ import annotations

import math

import torch
from torch import nn


def sinusoid_dims(d_model: int, n_positions: int = 128, count: int = 4) -> list[int]:
    """``count`` sine dimensions whose wavelengths (2π·10000^(2i/d)) spread evenly, on a log scale, from the
    fastest (2π) to about twice ``n_positions``: curves that show the wavelength growing, not near-copies."""
    pairs = d_model // 2
    top = min(math.log(2 * n_positions / (2 * math.pi)), math.log(10000.0) * (pairs - 1) / pairs)
    i = [round(pairs * top * s / ((count - 1) or 1) / math.log(10000.0)) for s in range(count)]
    return sorted({2 * min(max(x, 0), pairs - 1) for x in i})


def sinusoidal_table(n_positions: int, d_model: int) -> torch.Tensor:
    """PE(pos, 2i) = sin(pos / 10000^(2i/d)), PE(pos, 2i+1) = cos(pos / 10000^(2i/d)).

    Returns (n_positions, d_model) float32.
    """
    if d_model % 2:
        raise ValueError(f"sinusoidal encoding needs an even d_model, got {d_model}")
    pos = torch.arange(n_positions, dtype=torch.float64).unsqueeze(1)  # (P, 1)
    inv_freq = torch.exp(-math.log(10000.0) * torch.arange(0, d_model, 2, dtype=torch.float64) / d_model)
    table = torch.zeros(n_positions, d_model, dtype=torch.float64)
    table[:, 0::2] = torch.sin(pos * inv_freq)  # (P, d/2)
    table[:, 1::2] = torch.cos(pos * inv_freq)
    return table.float()


class SinusoidalPositionalEncoding(nn.Module):
    """Adds the fixed sinusoidal table (a buffer, not a parameter) to (B, N, d_model)."""

    def __init__(self, d_model: int, max_len: int) -> None:
        super().__init__()
        self.register_buffer("table", sinusoidal_table(max_len, d_model), persistent=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.table[: x.size(1)].to(x.dtype)  # (B, N, d_model)


class LearnedPositionalEmbedding(nn.Module):
    """A trained (max_len, d_model) table, as in BERT and GPT-2."""

    def __init__(self, d_model: int, max_len: int) -> None:
        super().__init__()
        self.embedding = nn.Embedding(max_len, d_model)

    @property
    def table(self) -> torch.Tensor:
        return self.embedding.weight

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        positions = torch.arange(x.size(1), device=x.device)
        return x + self.embedding(positions)  # (B, N, d_model)


def rope_angles(n_positions: int, d_k: int, base: float = 10000.0) -> torch.Tensor:
    """Rotation angle of each dimension pair at each position: (n_positions, d_k // 2)."""
    if d_k % 2:
        raise ValueError(f"RoPE needs an even head width, got {d_k}")
    inv_freq = base ** (-torch.arange(0, d_k, 2, dtype=torch.float64) / d_k)  # (d_k/2,)
    return (torch.arange(n_positions, dtype=torch.float64).unsqueeze(1) * inv_freq).float()


class RotaryEmbedding(nn.Module):
    """Rotates each (2i, 2i+1) pair of q and k by position-dependent angles (Su et al., 2021).

    Relative position then appears in q·k as the difference of the two rotations.
    """

    def __init__(self, d_k: int, max_len: int, base: float = 10000.0) -> None:
        super().__init__()
        angles = rope_angles(max_len, d_k, base)
        self.register_buffer("cos", angles.cos(), persistent=False)  # (P, d_k/2)
        self.register_buffer("sin", angles.sin(), persistent=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """x: (B, H, N, d_k) -> same shape, rotated."""
        n = x.size(-2)
        cos, sin = self.cos[:n].to(x.dtype), self.sin[:n].to(x.dtype)  # (N, d_k/2)
        x1, x2 = x[..., 0::2], x[..., 1::2]  # (B, H, N, d_k/2) each
        out = torch.stack((x1 * cos - x2 * sin, x1 * sin + x2 * cos), dim=-1)  # (B, H, N, d_k/2, 2)
        return out.flatten(-2)  # (B, H, N, d_k)
