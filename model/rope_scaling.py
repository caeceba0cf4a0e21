"""Scaled RoPE: the rotary frequencies of models trained to read longer texts than their original context, as
transformers 5 computes them (``modeling_rope_utils``; checked by tests/fixtures/hf_rope):

- ``linear``: every frequency divided by ``factor`` (positions interpolated);
- ``dynamic`` (NTK): the base grows with the length read, beyond ``original`` positions only — so the angles depend
  on the text's length, and a caption says which length they were computed for;
- ``llama3`` (Llama 3.1–3.3): long wavelengths divided by ``factor``, short ones kept, those between smoothed;
- ``yarn``: a ramp between interpolated and kept frequencies, and cos and sin scaled by an attention factor;
- ``longrope`` (Phi-3.5, Phi-4-mini): per-frequency factors, the short set up to ``original`` positions and the long
  set beyond, cos and sin scaled;
- ``factors``: per-frequency divisors as a GGUF stores them (``rope_freqs.weight``: Llama 3.x through llama.cpp).

No module here: :class:`model.positional.RotaryEmbedding` asks :func:`frequencies` for its table."""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

KINDS = ("linear", "dynamic", "llama3", "yarn", "longrope", "factors")


@dataclass(frozen=True)
class RopeScaling:
    """A scaled RoPE's parameters (the ``rope_*`` fields of TransformerConfig)."""

    kind: str
    factor: float = 1.0
    original: int = 0  # positions the model was first trained on (dynamic: its max_position_embeddings)
    low_freq_factor: float = 1.0  # llama3
    high_freq_factor: float = 4.0
    beta_fast: float = 32.0  # yarn
    beta_slow: float = 1.0
    truncate: bool = True
    attention_factor: float = 0.0  # yarn, longrope: cos and sin are scaled by it; 0: derived from factor
    mscale: float = 0.0
    mscale_all_dim: float = 0.0
    short: tuple[float, ...] = ()  # longrope (and GGUF factors): one divisor per frequency
    long: tuple[float, ...] = ()

    @property
    def by_length(self) -> bool:
        """Whether the frequencies depend on the length of the text read."""
        return self.kind in ("dynamic", "longrope")

    def scaled_for(self, length: int) -> bool:
        """Whether a text of ``length`` tokens is read with other frequencies than a short one."""
        return self.by_length and length > self.original


#: RopeScaling's fields -> TransformerConfig's
FIELDS = {
    "kind": "rope_scaling",
    "factor": "rope_factor",
    "original": "rope_original_max",
    "low_freq_factor": "rope_low_freq_factor",
    "high_freq_factor": "rope_high_freq_factor",
    "beta_fast": "rope_beta_fast",
    "beta_slow": "rope_beta_slow",
    "truncate": "rope_yarn_truncate",
    "attention_factor": "rope_attention_factor",
    "mscale": "rope_mscale",
    "mscale_all_dim": "rope_mscale_all_dim",
    "short": "rope_short_factor",
    "long": "rope_long_factor",
}


def _default(dims: int, base: float) -> torch.Tensor:
    return 1.0 / (base ** (torch.arange(0, dims, 2, dtype=torch.int64).float() / dims))  # (dims/2,)


def _mscale(scale: float, mscale: float = 1.0) -> float:
    return 1.0 if scale <= 1 else 0.1 * mscale * math.log(scale) + 1.0


def _yarn(s: RopeScaling, dims: int, base: float) -> tuple[torch.Tensor, float]:
    factor = s.factor
    if s.attention_factor:
        attention = s.attention_factor
    elif s.mscale and s.mscale_all_dim:
        attention = _mscale(factor, s.mscale) / _mscale(factor, s.mscale_all_dim)
    else:
        attention = _mscale(factor)

    def correction(rotations: float) -> float:
        return dims * math.log(s.original / (rotations * 2 * math.pi)) / (2 * math.log(base))

    low, high = correction(s.beta_fast), correction(s.beta_slow)
    if s.truncate:
        low, high = math.floor(low), math.ceil(high)
    low, high = max(low, 0), min(high, dims - 1)
    if low == high:
        high += 0.001  # the reference avoids a division by zero so
    ramp = ((torch.arange(dims // 2, dtype=torch.float32) - low) / (high - low)).clamp(0, 1)
    keep = 1 - ramp  # 1: extrapolate (the frequency kept), 0: interpolate (divided by factor)
    pos = base ** (torch.arange(0, dims, 2).float() / dims)
    return (1.0 / (factor * pos)) * (1 - keep) + (1.0 / pos) * keep, float(attention)


def _llama3(s: RopeScaling, dims: int, base: float) -> torch.Tensor:
    inv = _default(dims, base)
    low_wavelen, high_wavelen = s.original / s.low_freq_factor, s.original / s.high_freq_factor
    wavelen = 2 * math.pi / inv
    out = torch.where(wavelen > low_wavelen, inv / s.factor, inv)
    smooth = (s.original / wavelen - s.low_freq_factor) / (s.high_freq_factor - s.low_freq_factor)
    smoothed = (1 - smooth) * out / s.factor + smooth * out
    medium = ~(wavelen < high_wavelen) * ~(wavelen > low_wavelen)
    return torch.where(medium, smoothed, out)


def frequencies(s: RopeScaling | None, dims: int, base: float, length: int = 0) -> tuple[torch.Tensor, float]:
    """(the inverse frequencies (dims/2,) float32, the factor cos and sin are scaled by) for reading a text of
    ``length`` tokens (only ``dynamic`` and ``longrope`` look at it)."""
    if s is None:
        return _default(dims, base), 1.0
    if s.kind == "linear":
        return _default(dims, base) / s.factor, 1.0
    if s.kind == "dynamic":
        if length <= s.original:
            return _default(dims, base), 1.0
        grown = base * ((s.factor * length / s.original) - (s.factor - 1)) ** (dims / (dims - 2))
        return _default(dims, grown), 1.0
    if s.kind == "llama3":
        return _llama3(s, dims, base), 1.0
    if s.kind == "yarn":
        return _yarn(s, dims, base)
    if s.kind in ("longrope", "factors"):
        chosen = s.long if s.kind == "longrope" and length > s.original else s.short
        ext = torch.tensor(chosen, dtype=torch.float32)
        shape = torch.arange(0, dims, 2, dtype=torch.int64).float() / dims
        inv = 1.0 / (ext * base**shape)
        if s.kind == "factors":
            return inv, 1.0
        if s.attention_factor:
            return inv, float(s.attention_factor)
        return inv, 1.0 if s.factor <= 1 else math.sqrt(1 + math.log(s.factor) / math.log(s.original))
    raise ValueError(f"unknown RoPE scaling {s.kind!r}")


def check(s: RopeScaling, dims: int) -> None:
    """Refuse parameters the formulas cannot use (ValueError, with what to fix)."""
    if s.kind not in KINDS:
        raise ValueError(f"rope_scaling must be one of {', '.join(KINDS)} (or empty), got {s.kind!r}")
    if s.kind != "factors" and not s.factor > 0:
        raise ValueError(f"rope_factor must be positive, got {s.factor}")
    if s.kind in ("dynamic", "llama3", "yarn", "longrope") and s.original < 1:
        raise ValueError(f"RoPE scaling {s.kind!r} needs rope_original_max (the original context length)")
    if s.kind == "llama3" and not s.high_freq_factor > s.low_freq_factor > 0:
        raise ValueError("llama3 RoPE needs 0 < rope_low_freq_factor < rope_high_freq_factor")
    if s.kind == "dynamic" and dims <= 2:
        raise ValueError("dynamic RoPE needs heads wider than 2")
    wanted = dims // 2
    sets = (s.short, s.long) if s.kind == "longrope" else (s.short,) if s.kind == "factors" else ()
    if any(len(f) != wanted or not all(v > 0 for v in f) for f in sets):
        raise ValueError(f"RoPE scaling {s.kind!r} needs {wanted} positive factors, one per rotated pair")
