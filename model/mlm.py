"""Masked-token predictions for models with an MLM head."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from model.encoder import TransformerEncoder


@dataclass(frozen=True)
class Prediction:
    position: int  # token index in the sequence
    tokens: tuple[str, ...]  # top-k candidates, best first
    probs: tuple[float, ...]


def masked_predictions(
    model: TransformerEncoder,
    ids: torch.Tensor,
    positions: list[int],
    id_to_token,
    k: int = 5,
    ablate: tuple[tuple[int, int], ...] = (),
) -> list[Prediction]:
    """Top-k tokens with probabilities at each of ``positions`` of ids (1, N)."""
    from model.capture import run_with_cache

    if model.mlm is None:
        raise ValueError("this model has no masked-language-model head")
    if not positions:
        return []
    hidden, _ = run_with_cache(model, ids.to(next(model.parameters()).device), kinds=[], ablate=ablate)
    with torch.inference_mode():
        logits = model.mlm_logits(hidden[0, positions].to(next(model.parameters()).device)).float().cpu()
    probs = logits.softmax(-1)
    top = probs.topk(min(k, probs.size(-1)), dim=-1)
    return [
        Prediction(pos, tuple(id_to_token(int(i)) for i in idx), tuple(float(p) for p in val))
        for pos, idx, val in zip(positions, top.indices, top.values)
    ]
