"""Gradient attribution to the input tokens: gradient × input and integrated gradients.

The input is the token embedding (what ``tok_emb`` returns, before any scaling, position or LayerNorm), so
positions stay fixed and only "which token is here" is attributed. The output f is one number of a chosen
kind at a chosen position i:

- ``"mlm"``: the masked-language head's logit of the token it ranks first at i (models with an MLM head);
- ``"next"``: the next-token logit of the token ranked first after i (decoders);
- ``"state"``: token i's final hidden state projected on its own direction, f = h_i · u with u = h_i/‖h_i‖
  fixed at the real input (so f = ‖h_i‖ there): which inputs pushed the state to where it ended (any model;
  ‖h_i‖ itself is useless behind a final LayerNorm, which makes it almost constant).

Gradient × input (Shrikumar et al., 2016; Denil et al., 2014): a_j = Σ_d ∂f/∂e_jd · e_jd.
Integrated gradients (Sundararajan et al., 2017): a_j = Σ_d (e_jd − e'_jd) ∫₀¹ ∂f/∂e_jd(e' + t(e − e')) dt with
the padding token's embedding at every position as baseline e' (not the zero vector: RMSNorm and a LayerNorm
without added positions are scale-invariant, so f jumps at 0 and completeness would fail), the integral by the
midpoint rule; completeness says Σ_j a_j = f(e) − f(e'), and :func:`attribute` reports how far the sum is.
Gradients are taken with ``torch.autograd.grad``, so no parameter's ``.grad`` is touched on a shared model.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import torch

from model.transformer import Transformer

TARGETS = ("mlm", "next", "state")
IG_STEPS = 32
IG_BATCH = 8  # interpolation points per forward pass


def ig_steps(n_tokens: int) -> int:
    """Integration steps for a text of ``n_tokens``: 32 up to 128 tokens, 16 up to 256, 8 beyond (each step is a
    forward and backward pass; the completeness gap is reported, so a coarser integral shows)."""
    return IG_STEPS if n_tokens <= 128 else 16 if n_tokens <= 256 else 8


def targets_for(model: Transformer) -> tuple[str, ...]:
    """The outputs this model can be attributed for, most telling first."""
    heads = ("mlm",) if model.mlm is not None else ("next",) if model.cfg.lm_head else ()
    return (*heads, "state")


@dataclass(frozen=True)
class Attribution:
    """Per input token (N,) float32: gradient × input and integrated gradients (signed sums over d_model);
    the output f at the real input and at the baseline, the completeness gap |Σ IG − (f − f')|, and the token
    the logit belongs to (−1 for the state)."""

    grad_input: np.ndarray
    integrated: np.ndarray
    value: float
    baseline_value: float
    gap: float
    target_token: int
    steps: int


@contextlib.contextmanager
def _embeddings_replaced(model: Transformer, make) -> Iterator[None]:
    """``tok_emb``'s output replaced by ``make(embeddings)`` on this thread, inside the block only."""
    owner = threading.get_ident()

    def hook(_mod, _inp, out: torch.Tensor) -> torch.Tensor | None:
        return make(out) if threading.get_ident() == owner else None

    handle = model.tok_emb.register_forward_hook(hook)
    try:
        yield
    finally:
        handle.remove()


def _output(model: Transformer, hidden: torch.Tensor, position: int, target: str, token) -> torch.Tensor:
    """f for every batch row: hidden (B, N, d) -> (B,); ``token`` is the logit's token id, or the direction u
    (d,) for the state."""
    h = hidden[:, position]  # (B, d)
    if target == "state":
        return h @ token
    logits = model.mlm_logits(h[:, None])[:, 0] if target == "mlm" else model.lm_logits(h[:, None])[:, 0]  # (B, V)
    return logits[:, token]


def attribute(
    model: Transformer, ids: list[int], position: int, target: str = "state", steps: int | None = None
) -> Attribution:
    """Gradient × input and integrated gradients of output ``target`` at ``position`` w.r.t. each input token's
    embedding. ids: (N,) token ids; ``steps`` defaults to :func:`ig_steps`."""
    steps = ig_steps(len(ids)) if steps is None else steps
    if target not in targets_for(model):
        raise ValueError(f"this model offers {', '.join(targets_for(model))} as outputs, not {target!r}")
    if not 0 <= position < len(ids):
        raise ValueError(f"position {position} is outside the text's {len(ids)} tokens")
    device = next(model.parameters()).device
    batch = torch.tensor([list(ids)], device=device)
    with torch.inference_mode(False), torch.enable_grad():
        emb = model.tok_emb(batch).detach()  # (1, N, d)
        base = model.tok_emb.weight[model.cfg.pad_token_id].detach().expand_as(emb)  # (1, N, d)
        with torch.no_grad():
            hidden = model(batch)
        if target == "state":
            token = hidden[0, position] / hidden[0, position].norm().clamp_min(1e-12)  # u (d,)
        else:
            token = int(_output_logits(model, hidden, position, target).argmax())
        x = emb.clone().requires_grad_(True)
        with _embeddings_replaced(model, lambda _out: x):
            f = _output(model, model(batch), position, target, token)[0]
        (grad,) = torch.autograd.grad(f, x)
        grad_input = (grad * emb)[0].sum(-1)  # (N,)
        alphas = (torch.arange(steps, dtype=torch.float32, device=device) + 0.5) / steps  # midpoints
        total = torch.zeros_like(emb[0])  # (N, d)
        for start in range(0, steps, IG_BATCH):
            a = alphas[start : start + IG_BATCH]  # (S,)
            xs = (base + a[:, None, None] * (emb - base)).requires_grad_(True)  # (S, N, d)
            with _embeddings_replaced(model, lambda _out, xs=xs: xs):
                fs = _output(model, model(batch.expand(len(a), -1)), position, target, token)
            (g,) = torch.autograd.grad(fs.sum(), xs)
            total += g.sum(0)
        integrated = (total / steps * (emb - base)[0]).sum(-1)  # (N,)
        with torch.no_grad(), _embeddings_replaced(model, lambda _out: base):
            f0 = float(_output(model, model(batch), position, target, token)[0])
    value = float(f.detach())
    return Attribution(
        grad_input=grad_input.detach().float().cpu().numpy(),
        integrated=integrated.detach().float().cpu().numpy(),
        value=value,
        baseline_value=f0,
        gap=abs(float(integrated.sum()) - (value - f0)),
        target_token=token if isinstance(token, int) else -1,
        steps=steps,
    )


def _output_logits(model: Transformer, hidden: torch.Tensor, position: int, target: str) -> torch.Tensor:
    h = hidden[:, position : position + 1]  # (1, 1, d)
    return (model.mlm_logits(h) if target == "mlm" else model.lm_logits(h))[0, 0]  # (V,)
