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
without added positions are scale-invariant, so f jumps at 0 and completeness would fail). Completeness says
Σ_j a_j = f(e) − f(e'), and :func:`attribute` reports how far the sum is.

The integral is adaptive: a decoder's f can move in steps along the path (SmolLM2's next-token logit falls by 6
and climbs by 23 within 0.4 % of it), where a fixed rule of 32 midpoints missed the total by 243 % and 512 still by
28 %. The path starts cut into equal intervals, a gradient at each midpoint and f at each end; every interval's
own completeness error |Σ_j a_j^interval − (f(end) − f(start))| says where the rule fails, and the worst intervals
are halved (two new midpoints each) until those errors sum to ≤ 1 % of f(e) − f(e') or the budget of gradient
evaluations is spent. Smooth paths (MiniLM, BERT) stop after the first intervals.
Gradients are taken with ``torch.autograd.grad``, so no parameter's ``.grad`` is touched on a shared model.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import torch

from model.intervene import heads_off
from model.transformer import Transformer

TARGETS = ("mlm", "next", "state")
IG_STEPS = 128
IG_BATCH = 8  # interpolation points per forward pass
IG_TOLERANCE = 0.01  # refinement stops when the intervals' errors sum to ≤ 1 % of f(x) − f(baseline)
#: seconds per parameter (outside the embeddings) × token of one gradient evaluation on this project's 2 CPU cores,
#: rounded up (SmolLM2 at 13, 14 and 35 tokens: 73-84, 73 and 120 ms an evaluation; MiniLM at 14 tokens: 10 ms)
CPU_SECONDS_PER_UNIT = 5.5e-11


def ig_steps(n_tokens: int) -> int:
    """The most gradient evaluations integrated gradients spends on a text of ``n_tokens``: 128 up to 32 tokens,
    64 up to 128, 32 up to 256, 16 beyond (each a forward and backward pass; a smooth path stops far sooner, and
    the completeness gap is reported, so a coarser integral shows)."""
    return IG_STEPS if n_tokens <= 32 else 64 if n_tokens <= 128 else 32 if n_tokens <= 256 else 16


def ig_seconds(cfg, n_tokens: int) -> tuple[float, float]:
    """About how long :func:`attribute` takes on a 2-core CPU for a text of ``n_tokens``: at least (a smooth path,
    done after its first intervals) and at most (the whole budget of :func:`ig_steps`)."""
    body = max(cfg.parameter_count() - cfg.vocab_size * cfg.embed_width, 1)
    one = CPU_SECONDS_PER_UNIT * body * n_tokens  # a gradient evaluation
    steps = ig_steps(n_tokens)
    return one * (max(1, steps // 4) * 4 / 3 + 1), one * (steps + 1)  # the first intervals: midpoints and ends


def targets_for(model: Transformer) -> tuple[str, ...]:
    """The outputs this model can be attributed for, most telling first."""
    heads = ("mlm",) if model.mlm is not None else ("next",) if model.cfg.lm_head else ()
    return (*heads, "state")


@dataclass(frozen=True)
class Attribution:
    """Per input token (N,) float32: gradient × input and integrated gradients (signed sums over d_model);
    the output f at the real input and at the baseline, the completeness gap |Σ IG − (f − f')|, the token the
    logit belongs to (−1 for the state), the gradient evaluations spent, and the intervals' gaps added up."""

    grad_input: np.ndarray
    integrated: np.ndarray
    value: float
    baseline_value: float
    gap: float
    target_token: int
    steps: int
    misses: float  # Σ over the path's intervals of each one's own completeness gap (≥ gap: no cancelling)


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
    model: Transformer,
    ids: list[int],
    position: int,
    target: str = "state",
    steps: int | None = None,
    adaptive: bool = True,
    causal: bool | None = None,
    scale: bool = True,
    positions: bool = True,
    ablate: tuple[tuple[int, int], ...] = (),
) -> Attribution:
    """Gradient × input and integrated gradients of output ``target`` at ``position`` w.r.t. each input token's
    embedding. ids: (N,) token ids; ``steps``: the most gradient evaluations (default :func:`ig_steps`);
    ``adaptive=False``: the plain midpoint rule with exactly ``steps`` points. ``causal`` (None: the model's own
    mask), ``scale``, ``positions`` and ``ablate`` (heads switched off) as in :class:`model.observe.Options`: every
    pass runs as the attention pages draw."""
    steps = ig_steps(len(ids)) if steps is None else steps
    if target not in targets_for(model):
        raise ValueError(f"this model offers {', '.join(targets_for(model))} as outputs, not {target!r}")
    if not 0 <= position < len(ids):
        raise ValueError(f"position {position} is outside the text's {len(ids)} tokens")
    if steps < 1:
        raise ValueError(f"integrated gradients need at least one step, not {steps}")
    device = next(model.parameters()).device
    batch = torch.tensor([list(ids)], device=device)
    with torch.inference_mode(False), torch.enable_grad(), heads_off(model, ablate):
        emb = model.tok_emb(batch).detach()  # (1, N, d)
        base = model.tok_emb.weight[model.cfg.pad_token_id].detach().expand_as(emb)  # (1, N, d)
        run = {"causal": causal, "scale": scale, "positions": positions}
        with torch.no_grad():
            hidden = model(batch, **run)
        if target == "state":
            token = hidden[0, position] / hidden[0, position].norm().clamp_min(1e-12)  # u (d,)
        else:
            token = int(_output_logits(model, hidden, position, target).argmax())
        path = _Path(model, batch, base, emb, position, target, token, run)
        value, grad_input = path.at_input()
        f0 = float(path.values(np.zeros(1))[0])
        integrated, used, misses = _integrate(path, steps, adaptive, f0, value)
    gap = abs(float(integrated.sum()) - (value - f0))
    return Attribution(
        grad_input=grad_input.astype(np.float32),
        integrated=integrated.astype(np.float32),
        value=value,
        baseline_value=f0,
        gap=gap,
        target_token=token if isinstance(token, int) else -1,
        steps=used,
        misses=gap if misses is None else max(misses, gap),
    )


class _Path:
    """f along the straight path from the baseline e' (α = 0) to the input e (α = 1): values, and gradients
    dotted with e − e' per token. Every array here is float64 numpy."""

    def __init__(self, model, batch, base, emb, position, target, token, run: dict | None = None) -> None:
        self.model, self.batch, self.base, self.emb, self.run = model, batch, base, emb, run or {}
        self.position, self.target, self.token = position, target, token
        self.diff = (emb - base)[0]  # (N, d)

    def _f(self, xs: torch.Tensor) -> torch.Tensor:
        """xs (S, N, d) embeddings -> f (S,)."""
        with _embeddings_replaced(self.model, lambda _out: xs):
            hidden = self.model(self.batch.expand(xs.size(0), -1), **self.run)
        return _output(self.model, hidden, self.position, self.target, self.token)

    def _points(self, alphas: np.ndarray) -> torch.Tensor:
        a = torch.as_tensor(alphas, dtype=self.emb.dtype, device=self.emb.device)  # (S,)
        return self.base + a[:, None, None] * (self.emb - self.base)  # (S, N, d)

    def at_input(self) -> tuple[float, np.ndarray]:
        """f(e) and gradient × input (N,)."""
        x = self.emb.clone().requires_grad_(True)
        f = self._f(x)[0]
        (grad,) = torch.autograd.grad(f, x)
        return float(f.detach()), (grad * self.emb)[0].sum(-1).detach().double().cpu().numpy()

    def values(self, alphas: np.ndarray) -> np.ndarray:
        """f at each α (S,), forward passes only."""
        out = []
        with torch.no_grad():
            for start in range(0, len(alphas), 2 * IG_BATCH):
                out.append(self._f(self._points(alphas[start : start + 2 * IG_BATCH])))
        return torch.cat(out).double().cpu().numpy() if out else np.zeros(0)

    def gradients(self, alphas: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """f (S,) and each token's ∂f/∂e · (e − e') (S, N) at each α."""
        fs, parts = [], []
        for start in range(0, len(alphas), IG_BATCH):
            xs = self._points(alphas[start : start + IG_BATCH]).requires_grad_(True)  # (S, N, d)
            f = self._f(xs)
            (g,) = torch.autograd.grad(f.sum(), xs)
            fs.append(f.detach())
            parts.append((g * self.diff).sum(-1).detach())  # (S, N)
        return torch.cat(fs).double().cpu().numpy(), torch.cat(parts).double().cpu().numpy()


def _integrate(path: _Path, budget: int, adaptive: bool, f0: float, f1: float) -> tuple[np.ndarray, int, float]:
    """Σ over the path of ∂f/∂e · (e − e') dα per token (N,), the gradient evaluations it took, and how far the
    intervals miss their own f differences in all (Σ |Σ_j a_j^interval − Δf|; None for the plain rule).

    Plain: ``budget`` equal intervals, one midpoint each. Adaptive: a quarter of the budget as equal intervals,
    then the intervals whose own completeness error is largest are halved, IG_BATCH / 2 at a time, until the errors
    sum to ≤ IG_TOLERANCE · |f1 − f0| or the budget is spent (the module's note)."""
    k = budget if not adaptive or budget < 4 else budget // 4
    edges = np.linspace(0.0, 1.0, k + 1)
    f_mid, g_mid = path.gradients((edges[:-1] + edges[1:]) / 2)
    parts = g_mid / k  # (k, N): each interval's share of every token's integral
    if not adaptive or budget < 4:
        return parts.sum(0), k, None
    lo, hi = edges[:-1], edges[1:]
    f_edges = np.concatenate([[f0], path.values(edges[1:-1]), [f1]])
    f_lo, f_hi, used = f_edges[:-1], f_edges[1:], k
    while used + 2 <= budget:
        errors = np.abs(parts.sum(-1) - (f_hi - f_lo))  # (intervals,)
        if errors.sum() <= IG_TOLERANCE * abs(f1 - f0):
            break
        worst = np.argsort(-errors, kind="stable")[: min(IG_BATCH // 2, (budget - used) // 2)]
        mid = (lo[worst] + hi[worst]) / 2
        quarters = np.stack([(lo[worst] + mid) / 2, (mid + hi[worst]) / 2], 1).ravel()  # (2W,): left, right
        f_q, g_q = path.gradients(quarters)
        width = np.repeat((hi[worst] - lo[worst]) / 2, 2)  # (2W,)
        halves = (  # each worst interval becomes its left and right half; its midpoint is their shared end
            np.stack([lo[worst], mid], 1).ravel(), np.stack([mid, hi[worst]], 1).ravel(),
            np.stack([f_lo[worst], f_mid[worst]], 1).ravel(), np.stack([f_mid[worst], f_hi[worst]], 1).ravel(),
        )  # fmt: skip
        keep = np.ones(len(lo), dtype=bool)
        keep[worst] = False
        lo, hi = np.concatenate([lo[keep], halves[0]]), np.concatenate([hi[keep], halves[1]])
        f_lo, f_hi = np.concatenate([f_lo[keep], halves[2]]), np.concatenate([f_hi[keep], halves[3]])
        f_mid = np.concatenate([f_mid[keep], f_q])
        parts = np.concatenate([parts[keep], g_q * width[:, None]])
        used += len(quarters)
    misses = float(np.abs(parts.sum(-1) - (f_hi - f_lo)).sum())
    return parts.sum(0), used, misses


def _output_logits(model: Transformer, hidden: torch.Tensor, position: int, target: str) -> torch.Tensor:
    h = hidden[:, position : position + 1]  # (1, 1, d)
    return (model.mlm_logits(h) if target == "mlm" else model.lm_logits(h))[0, 0]  # (V,)
