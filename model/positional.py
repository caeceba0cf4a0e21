"""Positional encodings: sinusoidal, learned absolute, rotary (RoPE), and none."""

from __future__ import annotations

import math
import threading

import torch
from torch import nn

from model.rope_scaling import RopeScaling, frequencies


def sinusoid_dims(d_model: int, n_positions: int = 128, count: int = 4) -> list[int]:
    """``count`` sine dimensions whose wavelengths (2π·10000^(2i/d)) spread evenly, on a log scale, from the
    fastest (2π) to about twice ``n_positions``: curves that show the wavelength growing, not near-copies."""
    pairs = d_model // 2
    top = min(math.log(2 * n_positions / (2 * math.pi)), math.log(10000.0) * (pairs - 1) / pairs)
    i = [round(pairs * top * s / ((count - 1) or 1) / math.log(10000.0)) for s in range(count)]
    return sorted({2 * min(max(x, 0), pairs - 1) for x in i})


#: a model with the sinusoidal table reads at least this many tokens: the formula has no length of its own, so a
#: checkpoint trained (or saved) at 512 positions still has an encoding for every later one (model/long.py)
SINUSOIDAL_MIN_LEN = 8192
ROPE_FIRST_POSITIONS = 4096  # RoPE tables computed at first; they grow with the longest text read
_GROW = threading.Lock()  # one for every table (growing is rare; a lock on the module would stop deepcopy)


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
        with torch.device("cpu"):  # computed on the CPU even while a model is built on the meta device
            self.register_buffer("table", sinusoidal_table(max_len, d_model), persistent=False)

    def forward(self, x: torch.Tensor, offset: int = 0) -> torch.Tensor:
        """x (B, N, d_model) at positions offset … offset + N − 1 (a KV cache's newest tokens) -> (B, N, d_model)."""
        return x + self.table[offset : offset + x.size(1)].to(x.dtype)  # (B, N, d_model)


class LearnedPositionalEmbedding(nn.Module):
    """A trained (max_len, d_model) table, as in BERT and GPT-2. ``offset`` rows come first and are never used
    (RoBERTa numbers positions from padding_idx + 1 = 2): position p reads row p + offset."""

    def __init__(self, d_model: int, max_len: int, offset: int = 0) -> None:
        super().__init__()
        self.offset = offset
        self.embedding = nn.Embedding(max_len + offset, d_model)

    @property
    def table(self) -> torch.Tensor:
        """(max_len, d_model): the rows positions 0, 1, … read."""
        return self.embedding.weight[self.offset :]

    def forward(self, x: torch.Tensor, offset: int = 0) -> torch.Tensor:
        """x (B, N, d_model) at positions offset … offset + N − 1 (a KV cache's newest tokens) -> (B, N, d_model)."""
        positions = torch.arange(offset, offset + x.size(1), device=x.device) + self.offset  # (N,)
        return x + self.embedding(positions)  # (B, N, d_model)


def rope_angles(n_positions: int, d_k: int, base: float = 10000.0) -> torch.Tensor:
    """Rotation angle of each dimension pair at each position: (n_positions, d_k // 2).

    Computed in float32 exactly as LLaMA's reference code does (1 / base^(2i/d_k), times the position), not
    in float64: pretrained models learned with these rounded angles, and at position 20 the two already
    differ by ~1e-6 rad, enough to move a 30-layer model's logits by 1e-4."""
    if d_k % 2:
        raise ValueError(f"RoPE needs an even head width, got {d_k}")
    inv_freq = 1.0 / (base ** (torch.arange(0, d_k, 2, dtype=torch.int64).float() / d_k))  # (d_k/2,)
    return torch.arange(n_positions).float()[:, None] * inv_freq[None, :]  # (P, d_k/2)


class RotaryEmbedding(nn.Module):
    """Rotates pairs of q and k dimensions by position-dependent angles (Su et al., 2021).

    Relative position then appears in q·k as the difference of the two rotations. ``style`` says which
    dimensions form pair i: "interleaved" (2i, 2i+1), as in the paper and llama.cpp's GGUF layout, or "half"
    (i, i + d_k/2), as in Hugging Face's LLaMA ("rotate_half"). The two are the same rotation of a
    permuted head: q·k does not change, only which coordinates of q and k pair up.
    """

    def __init__(
        self,
        d_k: int,
        max_len: int,
        base: float = 10000.0,
        style: str = "interleaved",
        dims: int = 0,
        scaling: RopeScaling | None = None,
    ) -> None:
        super().__init__()
        if style not in ("interleaved", "half"):
            raise ValueError(f"RoPE style must be 'interleaved' or 'half', got {style!r}")
        self.style = style
        self.dims = dims or d_k  # partial rotary (GPT-NeoX): only the first ``dims`` of each head turn
        self.base, self.scaling = base, scaling  # a scaled RoPE (Llama 3.x, YaRN, …): model/rope_scaling.py
        self._size = (max_len, 0 if scaling is None or not scaling.by_length else min(max_len, scaling.original))
        with torch.device("cpu"):  # computed on the CPU even while a model is built on the meta device
            cos, sin = self.table(min(ROPE_FIRST_POSITIONS, max_len), self._size[1])
        self.register_buffer("cos", cos, persistent=False)  # (P, dims/2): the first positions' table
        self.register_buffer("sin", sin, persistent=False)
        self._long: tuple[int, torch.Tensor, torch.Tensor] | None = None  # (length, cos, sin) of the last long text

    def fill_tables(self, positions: int) -> tuple[torch.Tensor, torch.Tensor]:
        """The cos and sin tables, grown to at least ``positions`` (at most max_len) if they are shorter: Gemma 3's
        two tables for all its 32,768 positions would hold 64 MiB that most texts never read. Returns the tables
        to use; a table is only ever replaced by a longer one (two long texts may grow it at once)."""
        with _GROW:
            if self.cos.size(0) < positions:
                cos, sin = self.table(min(max(positions, 2 * self.cos.size(0)), self._size[0]), self._size[1])
                with torch.inference_mode(False):  # a copy to another device made here would be one too
                    self.register_buffer("cos", cos.to(self.cos.device), persistent=False)  # (P, dims/2)
                    self.register_buffer("sin", sin.to(self.sin.device), persistent=False)
            return self.cos, self.sin

    def table(self, n_positions: int, length: int) -> tuple[torch.Tensor, torch.Tensor]:
        """cos and sin (n_positions, dims/2) of the angles a text of ``length`` tokens is read with (the scaled RoPEs
        that depend on it), times the scaling's attention factor. Kept between passes, so never inference tensors
        (a table made inside ``torch.inference_mode`` would break every later pass that takes gradients)."""
        with torch.inference_mode(False), torch.no_grad():
            inv_freq, factor = frequencies(self.scaling, self.dims, self.base, length)
            angles = torch.arange(n_positions).float()[:, None] * inv_freq[None, :]  # (P, dims/2)
            return angles.cos() * factor, angles.sin() * factor

    def forward(self, x: torch.Tensor, offset: int = 0) -> torch.Tensor:
        """x: (B, H, N, d_k) at positions offset … offset + N − 1 -> same shape, rotated."""
        n = x.size(-2)
        if offset + n > self._size[0]:
            raise ValueError(f"RoPE table holds {self._size[0]} positions; asked for {offset + n}")
        cos_t, sin_t = self.cos, self.sin
        if offset + n > cos_t.size(0):  # a longer text than any before: the tables double (or reach max_len)
            cos_t, sin_t = self.fill_tables(offset + n)
        if self.scaling is not None and self.scaling.scaled_for(offset + n):  # dynamic NTK, LongRoPE's long set
            length = offset + n
            if self._long is None or self._long[0] != length or self._long[1].device != x.device:
                cos_l, sin_l = self.table(self.cos.size(0), length)
                with torch.inference_mode(False):
                    self._long = (length, cos_l.to(x.device), sin_l.to(x.device))
            cos_t, sin_t = self._long[1], self._long[2]
        cos = cos_t[offset : offset + n].to(x.dtype)  # (N, dims/2)
        sin = sin_t[offset : offset + n].to(x.dtype)
        if self.dims < x.size(-1):
            turned = self._rotate(x[..., : self.dims], cos, sin)  # (B, H, N, dims)
            return torch.cat((turned, x[..., self.dims :]), dim=-1)  # (B, H, N, d_k)
        return self._rotate(x, cos, sin)

    def _rotate(self, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
        if self.style == "half":
            half = x.size(-1) // 2
            x1, x2 = x[..., :half], x[..., half:]  # (B, H, N, d_k/2) each
            return torch.cat((x1 * cos - x2 * sin, x1 * sin + x2 * cos), dim=-1)  # (B, H, N, d_k)
        x1, x2 = x[..., 0::2], x[..., 1::2]  # (B, H, N, d_k/2) each
        out = torch.stack((x1 * cos - x2 * sin, x1 * sin + x2 * cos), dim=-1)  # (B, H, N, d_k/2, 2)
        return out.flatten(-2)  # (B, H, N, d_k)


def relative_buckets(relative: torch.Tensor, bidirectional: bool, n_buckets: int, max_distance: int) -> torch.Tensor:
    """The bucket of each relative position key − query (T5's ``_relative_position_bucket``, MPNet's too).

    Bidirectional: half the buckets for keys after the query. Within a side, distances below n_side / 2 get a bucket
    each; farther ones share log-spaced buckets up to ``max_distance``, beyond which all share the last. Causal:
    keys after the query (masked anyway) fall in bucket 0. relative (…) int -> buckets (…) int64.
    """
    buckets = torch.zeros_like(relative)
    if bidirectional:
        n_buckets //= 2
        buckets = buckets + (relative > 0).long() * n_buckets
        distance = relative.abs()
    else:
        distance = -torch.clamp(relative, max=0)
    exact = n_buckets // 2
    small = distance < exact
    far = (
        exact
        + (
            torch.log(distance.float().clamp(min=1) / exact) / math.log(max_distance / exact) * (n_buckets - exact)
        ).long()
    )
    far = torch.clamp(far, max=n_buckets - 1)
    return buckets + torch.where(small, distance, far)


class RelativeBias(nn.Module):
    """T5's and MPNet's relative-position bias: a learned number per bucket and head (n_buckets, H), looked up for
    every query–key pair and added to the scores of every layer's self-attention."""

    def __init__(self, n_heads: int, n_buckets: int, max_distance: int, bidirectional: bool) -> None:
        super().__init__()
        self.embedding = nn.Embedding(n_buckets, n_heads)  # (n_buckets, H)
        self.n_buckets, self.max_distance, self.bidirectional = n_buckets, max_distance, bidirectional

    def buckets(self, n: int, m: int, offset: int = 0, device: torch.device | None = None) -> torch.Tensor:
        """The bucket of queries at positions offset … offset + n − 1 and keys 0 … m − 1: (n, m) int64."""
        query = torch.arange(offset, offset + n, device=device)[:, None]  # (n, 1)
        key = torch.arange(m, device=device)[None, :]  # (1, m)
        return relative_buckets(key - query, self.bidirectional, self.n_buckets, self.max_distance)

    def forward(self, n: int, m: int, offset: int = 0) -> torch.Tensor:
        """The bias (1, H, n, m) for n queries (from position ``offset``) over m keys."""
        table = self.embedding.weight
        values = self.embedding(self.buckets(n, m, offset, table.device))  # (n, m, H)
        return values.permute(2, 0, 1)[None]  # (1, H, n, m)
