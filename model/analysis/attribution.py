"""Attribution patching (Nanda, 2023; Syed et al., 2023): activation patching by its linear approximation.

Activation patching (model/analysis/patching.py) runs the corrupted prompt once per patched cell. Attribution
patching estimates every cell at once from one forward pass of the clean prompt and one forward and backward pass
of the corrupted one: the metric's change when activation a takes its clean value is, to first order,

    Δmetric ≈ (a_clean − a_corrupted) · ∂metric/∂a  at the corrupted run,

summed over d_model at one layer and position (the residual stream, the attention and feed-forward outputs) or
over every position and d_k for one head's output z. The result is a :class:`Patching` like activation
patching's, so ``recovered(kind)`` reads the same; it is an estimate, exact only where the model is linear
between the cell and the metric (good for head outputs near the end, poor for the early residual stream, where a
whole token's identity changes: see docs/research.md for how well it agrees with real patching on IOI).

A batch of equal-length prompt pairs ((B, N) ids) averages the metric over the pairs, as IOI studies do.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch

from model.analysis.patching import HEAD_KIND, PATCH_KINDS, Metric, Patching, as_batch
from model.capture import hook_name
from model.intervene import hooks, readout
from model.transformer import Transformer


def grad_cache(
    model: Transformer, ids, metric: Metric, names: Sequence[str]
) -> tuple[float, dict[str, torch.Tensor], dict[str, torch.Tensor]]:
    """One forward and backward pass: the metric (averaged over the batch), and the activations and the metric's
    gradients at the named hook points (detached, (B, ...) as the hook points hold them)."""
    batch = as_batch(model, ids)
    acts: dict[str, torch.Tensor] = {}
    grads: dict[str, torch.Tensor] = {}

    def keep(x: torch.Tensor, hook) -> None:
        acts[hook.name] = x.detach()

    def keep_grad(g: torch.Tensor, hook) -> None:
        grads[hook.name] = g.detach()

    fwd = [(name, keep) for name in names]
    with torch.inference_mode(False), torch.enable_grad(), hooks(model, fwd, [(n, keep_grad) for n in names]) as taken:
        hidden = model(batch)  # (B, N, d_model)
        value = metric(readout(model, hidden[:, metric.position])).double().mean()
        torch.autograd.grad(value, taken, allow_unused=True)
    for name in names:  # a point the metric does not depend on (nothing flows back): gradient zero
        grads.setdefault(name, torch.zeros_like(acts[name]))
    return float(value.detach()), acts, grads


def activations(model: Transformer, ids, metric: Metric, names: Sequence[str]) -> tuple[float, dict[str, torch.Tensor]]:
    """One forward pass: the metric (averaged over the batch) and the named activations."""
    batch = as_batch(model, ids)
    acts: dict[str, torch.Tensor] = {}

    def keep(x: torch.Tensor, hook) -> None:
        acts[hook.name] = x.detach()

    with torch.no_grad(), hooks(model, [(name, keep) for name in names]):
        hidden = model(batch)
        value = metric(readout(model, hidden[:, metric.position])).double().mean()
    return float(value), acts


def attribution_patching(
    model: Transformer, clean, corrupted, metric: Metric, kinds: Sequence[str] = PATCH_KINDS
) -> Patching:
    """Every cell of activation patching's sweep, estimated: kind -> (L, N) per layer and position, (L, H) per head.
    ``clean`` and ``corrupted``: one id list each, or batches of equal-length pairs."""
    for kind in kinds:
        if kind not in PATCH_KINDS:
            raise ValueError(f"unknown patch kind {kind!r}; choose from {', '.join(PATCH_KINDS)}")
    clean_b, corrupted_b = as_batch(model, clean), as_batch(model, corrupted)
    if clean_b.shape != corrupted_b.shape:
        raise ValueError(
            f"the clean prompts are {tuple(clean_b.shape)} tokens and the corrupted ones {tuple(corrupted_b.shape)}: "
            "patching compares position with position, so they must have the same shape"
        )
    L = model.cfg.n_layers
    names = [hook_name(kind, i) for kind in kinds for i in range(L)]
    clean_value, clean_acts = activations(model, clean_b, metric, names)
    corrupted_value, corrupted_acts, grads = grad_cache(model, corrupted_b, metric, names)
    raw = estimate(clean_acts, corrupted_acts, grads, corrupted_value, kinds, L)
    return Patching(metric, clean_value, corrupted_value, raw)


def estimate(
    donor: dict[str, torch.Tensor],
    receiver: dict[str, torch.Tensor],
    grads: dict[str, torch.Tensor],
    receiver_value: float,
    kinds: Sequence[str],
    n_layers: int,
) -> dict[str, np.ndarray]:
    """The metric each patched run would have, to first order: receiver_value + (donor − receiver) · gradient,
    kind -> (L, N) or (L, H). The gradients are the batch mean's, so summing over the batch estimates the mean."""
    raw = {}
    for kind in kinds:
        rows = []
        for i in range(n_layers):
            name = hook_name(kind, i)
            delta = (donor[name] - receiver[name]).double() * grads[name].double()
            if kind == HEAD_KIND:
                rows.append(delta.sum(dim=(0, 2, 3)))  # (B, H, N, d_k) -> (H,)
            else:
                rows.append(delta.sum(dim=(0, 2)))  # (B, N, d_model) -> (N,)
        raw[kind] = receiver_value + torch.stack(rows).cpu().numpy()  # (L, N) or (L, H)
    return raw
