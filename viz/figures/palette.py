"""Colours that stay apart for every reader: how a colour looks with protanopia, deuteranopia and tritanopia (Machado,
Oliveira & Fernandes 2009, severity 1, applied in linear RGB), how far apart two colours look (CIEDE2000), and text
contrast (WCAG 2). No plotting here: the head view's palette is chosen with these (scripts/choose_palette.py) and
tests/viz/test_palette.py measures it again."""

from __future__ import annotations

import numpy as np

#: Machado et al. (2009), severity 1.0: linear-RGB matrices
CVD = {
    "protanopia": np.array(
        [[0.152286, 1.052583, -0.204868], [0.114503, 0.786281, 0.099216], [-0.003882, -0.048116, 1.051998]]
    ),
    "deuteranopia": np.array(
        [[0.367322, 0.860646, -0.227968], [0.280085, 0.672501, 0.047413], [-0.011820, 0.042940, 0.968881]]
    ),
    "tritanopia": np.array(
        [[1.255528, -0.076749, -0.178779], [-0.078411, 0.930809, 0.147602], [0.004733, 0.691367, 0.303900]]
    ),
}


def hex_rgb(colour: str) -> np.ndarray:
    """'#RRGGBB' -> sRGB in [0, 1], shape (3,)."""
    c = colour.lstrip("#")
    return np.array([int(c[i : i + 2], 16) for i in (0, 2, 4)], dtype=float) / 255.0


def rgb_hex(rgb) -> str:
    return "#" + "".join(f"{round(float(v) * 255):02X}" for v in np.clip(rgb, 0, 1))


def linear(srgb: np.ndarray) -> np.ndarray:
    return np.where(srgb <= 0.04045, srgb / 12.92, ((srgb + 0.055) / 1.055) ** 2.4)


def gamma(lin: np.ndarray) -> np.ndarray:
    lin = np.clip(lin, 0.0, 1.0)
    return np.where(lin <= 0.0031308, lin * 12.92, 1.055 * lin ** (1 / 2.4) - 0.055)


def simulate(srgb: np.ndarray, kind: str) -> np.ndarray:
    """How sRGB colours (..., 3) look with ``kind`` ("protanopia", "deuteranopia", "tritanopia")."""
    return gamma(linear(np.asarray(srgb, dtype=float)) @ CVD[kind].T)


def lab(srgb: np.ndarray) -> np.ndarray:
    """sRGB (..., 3) -> CIELAB (D65)."""
    xyz = (
        linear(np.asarray(srgb, dtype=float))
        @ np.array(
            [[0.4124564, 0.3575761, 0.1804375], [0.2126729, 0.7151522, 0.0721750], [0.0193339, 0.1191920, 0.9503041]]
        ).T
    )
    xyz = xyz / np.array([0.95047, 1.0, 1.08883])
    f = np.where(xyz > (6 / 29) ** 3, np.cbrt(xyz), xyz / (3 * (6 / 29) ** 2) + 4 / 29)
    return np.stack([116 * f[..., 1] - 16, 500 * (f[..., 0] - f[..., 1]), 200 * (f[..., 1] - f[..., 2])], -1)


def ciede2000(lab1: np.ndarray, lab2: np.ndarray) -> np.ndarray:
    """CIEDE2000 colour difference between CIELAB colours (..., 3) (Sharma, Wu & Dalal 2005)."""
    L1, a1, b1 = np.moveaxis(np.asarray(lab1, dtype=float), -1, 0)
    L2, a2, b2 = np.moveaxis(np.asarray(lab2, dtype=float), -1, 0)
    c_bar = (np.hypot(a1, b1) + np.hypot(a2, b2)) / 2
    g = 0.5 * (1 - np.sqrt(c_bar**7 / (c_bar**7 + 25.0**7)))
    a1p, a2p = (1 + g) * a1, (1 + g) * a2
    c1p, c2p = np.hypot(a1p, b1), np.hypot(a2p, b2)
    h1p = np.degrees(np.arctan2(b1, a1p)) % 360
    h2p = np.degrees(np.arctan2(b2, a2p)) % 360
    dL, dC = L2 - L1, c2p - c1p
    dh = h2p - h1p
    dh = np.where(dh > 180, dh - 360, np.where(dh < -180, dh + 360, dh))
    dh = np.where(c1p * c2p == 0, 0, dh)
    dH = 2 * np.sqrt(c1p * c2p) * np.sin(np.radians(dh / 2))
    L_bar, c_barp = (L1 + L2) / 2, (c1p + c2p) / 2
    hsum = h1p + h2p
    wrapped = np.where(hsum < 360, hsum + 360, hsum - 360) / 2
    h_bar = np.where(c1p * c2p == 0, hsum, np.where(np.abs(h1p - h2p) <= 180, hsum / 2, wrapped))
    t = (
        1
        - 0.17 * np.cos(np.radians(h_bar - 30))
        + 0.24 * np.cos(np.radians(2 * h_bar))
        + 0.32 * np.cos(np.radians(3 * h_bar + 6))
        - 0.20 * np.cos(np.radians(4 * h_bar - 63))
    )
    sl = 1 + 0.015 * (L_bar - 50) ** 2 / np.sqrt(20 + (L_bar - 50) ** 2)
    sc, sh = 1 + 0.045 * c_barp, 1 + 0.015 * c_barp * t
    rt = -2 * np.sqrt(c_barp**7 / (c_barp**7 + 25.0**7)) * np.sin(np.radians(60 * np.exp(-(((h_bar - 275) / 25) ** 2))))
    return np.sqrt((dL / sl) ** 2 + (dC / sc) ** 2 + (dH / sh) ** 2 + rt * (dC / sc) * (dH / sh))


def min_distance(colours: list[str], kind: str | None = None) -> float:
    """The smallest CIEDE2000 distance between any two of ``colours``, as seen with ``kind`` (None: typical vision)."""
    rgb = np.array([hex_rgb(c) for c in colours])
    seen = lab(rgb if kind is None else simulate(rgb, kind))
    d = ciede2000(seen[:, None], seen[None, :])
    return float(d[~np.eye(len(colours), dtype=bool)].min())


def luminance(colour: str) -> float:
    """WCAG 2 relative luminance."""
    return float(linear(hex_rgb(colour)) @ np.array([0.2126, 0.7152, 0.0722]))


def contrast(fg: str, bg: str) -> float:
    """WCAG 2 contrast ratio of two colours (1 to 21)."""
    hi, lo = sorted((luminance(fg), luminance(bg)), reverse=True)
    return (hi + 0.05) / (lo + 0.05)


def text_on(background: str) -> str:
    """Black or white, whichever contrasts more with ``background``."""
    return "#000000" if contrast("#000000", background) >= contrast("#FFFFFF", background) else "#FFFFFF"
