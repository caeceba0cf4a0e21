"""What a model's RoPE really turns, for Positional encodings → This model's encoding: the rotation angles (a scaled
RoPE's real ones), fast and slow pairs, and — for a scaled RoPE — each pair's wavelength beside the unscaled one,
with a caption computed from the two (and, where the angles depend on the text's length, the length they are for)."""

from __future__ import annotations

import math

import numpy as np

from model.rope_scaling import frequencies
from viz.figures.common import Theme
from viz.figures.positional import encoding_curves, encoding_heatmap, rope_wavelengths
from viz.views.base import Captioned

NAMES = {
    "linear": "linear interpolation",
    "dynamic": "dynamic NTK",
    "llama3": "Llama 3's scaling",
    "yarn": "YaRN",
    "longrope": "LongRoPE",
    "factors": "per-pair factors (the GGUF's rope_freqs)",
}


def wavelength_caption(spec, plain: np.ndarray, real: np.ndarray, attention: float, length: int, base: float) -> str:
    """What the scaling does to the pairs' wavelengths, counted from ``plain`` and ``real`` (P,)."""
    ratio = real / plain
    same = int(np.sum(np.isclose(ratio, 1.0, rtol=1e-4)))
    slowest = int(np.argmax(real))
    name = NAMES.get(spec.kind, spec.kind)
    if same == plain.size:
        parts = [f"{name}: all {plain.size} pairs keep the wavelengths they have without scaling."]
    else:
        parts = [
            f"{name}: {same} of {plain.size} pairs keep their wavelength, {plain.size - same} turn slower (up to "
            f"×{ratio.max():.2f}); the slowest pair now repeats every {real[slowest]:,.0f} positions instead of "
            f"{plain[slowest]:,.0f}."
        ]
    if spec.by_length:
        regime = "past" if spec.scaled_for(length) else "within"
        parts.append(f"Computed for this text's {length:,} tokens, {regime} the original {spec.original:,}")
        if spec.kind == "dynamic" and spec.scaled_for(length):
            grown = base * ((spec.factor * length / spec.original) - (spec.factor - 1)) ** (
                len(plain) * 2 / (len(plain) * 2 - 2)
            )
            parts[-1] += f": the base grows from {base:,.0f} to {grown:,.0f}"
        elif spec.kind == "longrope":
            parts[-1] += f": the {'long' if spec.scaled_for(length) else 'short'} factors"
        parts[-1] += "; another length turns other angles."
    if not math.isclose(attention, 1.0):
        parts.append(f"cos and sin are scaled by {attention:.3f}, sharpening every score.")
    return " ".join(parts)


def rope_views(src, theme: Theme, real: np.ndarray, length: int) -> dict:
    """The figures of a RoPE model's encoding; ``real`` (n, P): its angles for a text of ``length`` tokens."""
    cfg = src.loaded.model.cfg
    out = {
        "angles": encoding_heatmap(
            real, title="RoPE rotation angle per dimension pair (radians)", theme=theme, x_title="pair"
        ),
        "curves": encoding_curves(
            np.cos(real),
            [0, real.shape[1] // 2, real.shape[1] - 1],
            title="cos(angle) over position: fast pairs and slow pairs",
            theme=theme,
        ),
    }
    if cfg.nope_layers:  # SmolLM3: some layers skip these rotations
        rotated = cfg.n_layers - len(cfg.nope_layers)
        out["angles"] = Captioned(
            out["angles"],
            f"These angles turn q and k in {rotated} of {cfg.n_layers} layers; layer "
            f"{', '.join(map(str, cfg.nope_layers))} skip{'s' if len(cfg.nope_layers) == 1 else ''} them (NoPE): "
            "their attention sees no positions, only content and the causal mask.",
        )
    spec = cfg.rope_spec
    if spec is not None:
        plain = 2 * math.pi / frequencies(None, cfg.rope_dims, cfg.rope_base)[0].double().numpy()
        inv, attention = frequencies(spec, cfg.rope_dims, cfg.rope_base, length)
        scaled = 2 * math.pi / inv.double().numpy()
        fig = rope_wavelengths(
            plain, scaled, original=spec.original, title=f"{src.loaded.name}: each pair's wavelength", theme=theme
        )
        out["wavelengths"] = Captioned(fig, wavelength_caption(spec, plain, scaled, attention, length, cfg.rope_base))
    return out
