"""Composition between heads (Elhage et al., 2021, "A Mathematical Framework for Transformer Circuits"): how much a
later head reads what an earlier head writes, from the weights alone.

An earlier head h1 writes through its OV matrix W_V W_O (d × d); a later head h2 reads the stream through its query
side (Q-composition: W_Q W_Kᵀ), its key side (K-composition: (W_Q W_Kᵀ)ᵀ) or its value side (V-composition:
W_V W_O). The score is

    ‖W_OV¹ · M²‖_F / (‖W_OV¹‖_F ‖M²‖_F),

1 when h2's reading matrix lies wholly in what h1 writes, about √(d_k/d) for unrelated random matrices. An induction
head K-composes with a previous-token head: its keys read which token came before.

The weights are taken as TransformerLens's defaults process them, so the scores equal ``all_composition_scores``
(tests/model/test_transformer_lens.py): the attention norm's weight folded into W_Q, W_K and W_V; under LayerNorm the
reading weights centred over d_model (the norm's output has no mean) and W_O centred too (the next norm removes the
mean of what a head writes). RMSNorm keeps them as they are. Grouped-query heads read their key/value head's W_K
and W_V.
"""

from __future__ import annotations

import weakref

import numpy as np
import torch

from model.analysis.circuits import head_matrices
from model.transformer import Transformer

MODES = ("Q", "K", "V")
_cache: weakref.WeakKeyDictionary[Transformer, dict[str, torch.Tensor]] = weakref.WeakKeyDictionary()


def _centred(model: Transformer) -> bool:
    return model.cfg.norm_kind == "layernorm" and model.cfg.norm == "pre"


def factors(model: Transformer) -> dict[str, torch.Tensor]:
    """Every head's W_Q, W_K, W_V (L, H, d_model, d_k) and W_O (L, H, d_k, d_model), float64, processed as above
    (computed once per model)."""
    if model in _cache:
        return _cache[model]
    cfg = model.cfg
    per = {"q": [], "k": [], "v": [], "o": []}
    for layer in range(cfg.n_layers):
        rows = {k: [] for k in per}
        for head in range(model.blocks[layer].attn.n_heads):
            m = head_matrices(model, layer, head)
            for k in per:
                rows[k].append(m[k])
        for k in per:
            per[k].append(torch.stack(rows[k]))
    out = {k: torch.stack(v) for k, v in per.items()}  # (L, H, ...)
    if _centred(model):
        for k in ("q", "k", "v"):
            out[k] = out[k] - out[k].mean(dim=-2, keepdim=True)  # over d_model, the rows
        out["o"] = out["o"] - out["o"].mean(dim=-1, keepdim=True)  # over d_model, the columns
    _cache[model] = out
    return out


def _norms(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """‖A B‖_F for factored products A (…, d, k) B (…, k, d), through the k × k Gram matrices (no d × d product)."""
    return torch.einsum("...ij,...ji->...", a.transpose(-1, -2) @ a, b @ b.transpose(-1, -2)).clamp_min(0).sqrt()


def _sides(w: dict[str, torch.Tensor], mode: str) -> tuple[torch.Tensor, torch.Tensor]:
    """The later head's reading matrix M = A B as its factors (L, H, d, k) and (L, H, k, d)."""
    if mode not in MODES:
        raise ValueError(f"mode must be one of {', '.join(MODES)}, not {mode!r}")
    if mode == "Q":
        return w["q"], w["k"].transpose(-1, -2)  # W_Q W_Kᵀ
    if mode == "K":
        return w["k"], w["q"].transpose(-1, -2)  # (W_Q W_Kᵀ)ᵀ = W_K W_Qᵀ
    return w["v"], w["o"]  # W_V W_O


def _reading(w: dict[str, torch.Tensor], mode: str, layer: int, heads: slice) -> torch.Tensor:
    """Scores of ``heads`` of ``layer`` reading every head before it: (layer, H, h)."""
    right_a, right_b = (x[layer, heads] for x in _sides(w, mode))  # (h, d, k), (h, k, d)
    left_a, left_b = w["v"][:layer], w["o"][:layer]  # W_OV = W_V W_O: (l, H, d, k), (l, H, k, d)
    # ‖A₁ B₁ A₂ B₂‖²_F = tr(G₁ · M P₂ Mᵀ) with G₁ = A₁ᵀA₁, M = B₁A₂ and P₂ = B₂B₂ᵀ, all k × k: no d × d product
    gram = left_a.transpose(-1, -2) @ left_a  # (l, H, k, k)
    reach = right_b @ right_b.transpose(-1, -2)  # (h, k, k)
    middle = left_b[:, :, None] @ right_a[None, None]  # (l, H, h, k, k)
    inner = middle @ reach @ middle.transpose(-1, -2)  # (l, H, h, k, k)
    prod = torch.einsum("lhij,lhgji->lhg", gram, inner).clamp_min(0).sqrt()  # (l, H, h)
    left_norm = _norms(left_a, left_b)  # (l, H)
    right_norm = _norms(right_a, right_b)  # (h,)
    return prod / (left_norm[:, :, None] * right_norm[None, None]).clamp_min(1e-30)


def composition_scores(model: Transformer, mode: str) -> np.ndarray:
    """(L, H, L, H): score[l1, h1, l2, h2] of head (l2, h2) reading what (l1, h1) writes, ``mode`` "Q", "K" or "V";
    0 unless l1 < l2."""
    w = factors(model)
    _sides(w, mode)  # checks the mode
    L, H = w["q"].shape[:2]
    scores = torch.zeros(L, H, L, H, dtype=torch.float64)
    for layer in range(1, L):
        scores[:layer, :, layer] = _reading(w, mode, layer, slice(None))
    return scores.numpy()


def composition_with(model: Transformer, layer: int, head: int, mode: str) -> np.ndarray:
    """(layer, H): how strongly head (layer, head) reads each earlier head, ``composition_scores(...)[:layer, :,
    layer, head]`` without the other heads' work."""
    w = factors(model)
    if not 0 <= layer < w["q"].shape[0] or not 0 <= head < w["q"].shape[1]:
        raise ValueError(f"L{layer}H{head} is not a head of this model")
    return _reading(w, mode, layer, slice(head, head + 1))[..., 0].numpy()
