"""Activation patching (Meng et al., 2022; Wang et al., 2022): which activations carry the answer.

Run a clean prompt ("When Mary and John went to the store, John gave a drink to") and a corrupted one of the
same length that changes the answer ("… Mary gave a drink to"). Then run the corrupted prompt again with one
activation taken from the clean run — the residual stream, the attention output or the feed-forward output at
one layer and position, or one head's output z at every position — and measure how much of the clean answer
comes back:

    recovered = (metric(patched) − metric(corrupted)) / (metric(clean) − metric(corrupted))

1 means that activation alone carries what the corruption took away; 0 means it carries nothing of it. The
metric is the logit difference between two answer tokens (or the probability of one) at the last position.
Path patching (which path between two heads carries it) is in model/analysis/paths.py, the one-pass estimate of
this sweep (attribution patching) in model/analysis/attribution.py.

A batch of equal-length prompt pairs ((B, N) ids, one answer and foil per pair) is patched pair by pair in the same
runs, and every cell reports the metric averaged over the pairs (IOI over 50 prompts in docs/research.md).

Each patched run starts from the receiving run's stream at the patched layer (the layers before it cannot
change), and the runs of one layer go as one batch: a sweep costs about (L + 1) / 2 full passes per
position (per head for z), not L. In a causal model a position's patched runs also start at the first position
their batch patches, the receiving run's keys and values standing in for the positions before it (nothing before
a patch can change): about a third less at 70 tokens.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import torch

from model.analysis.memo import once
from model.attention import KVCache
from model.capture import hook_name
from model.intervene import hooks, readout
from model.transformer import Transformer

POSITION_KINDS = ("resid_pre", "attn_out", "mlp_out")  # patched per layer × position
HEAD_KIND = "z"  # patched per layer × head, at every position
PATCH_KINDS = (*POSITION_KINDS, HEAD_KIND)
MAX_BATCH = 32
#: a causal model's position sweep: up to STARTS batches, each starting at its first position, of at least
#: MIN_RUNS runs (SmolLM2, 70 tokens, resid_pre: 106-124 s whole, 72-77 s from 3-8 starts; at 14 tokens batches of 2
#: took twice as long as one batch: below some work per batch the blocks' fixed cost wins)
STARTS, MIN_RUNS = 8, 16


Tokens = int | tuple[int, ...]


def _pick(logits: torch.Tensor, token: Tokens) -> torch.Tensor:
    """logits (..., B, V) -> (..., B): one token for every row, or one per prompt of a batch of B."""
    if isinstance(token, int):
        return logits[..., token]
    which = torch.tensor(token, device=logits.device)  # (B,)
    if logits.size(-2) != len(which):
        raise ValueError(f"the metric has {len(which)} answers, one per prompt, for a batch of {logits.size(-2)}")
    return logits.gather(-1, which.expand(*logits.shape[:-1])[..., None])[..., 0]


@dataclass(frozen=True)
class Metric:
    """What the runs are scored by, at ``position`` (default: the last): logit(answer) − logit(foil), or the
    probability of ``answer`` when there is no foil. For a batch of prompts, ``answer`` and ``foil`` may be
    tuples with one token per prompt (IOI: each prompt's own names)."""

    answer: Tokens
    foil: Tokens | None = None
    position: int = -1

    def __call__(self, logits: torch.Tensor) -> torch.Tensor:
        """logits (B, V) at the metric's position -> (B,); (R, B, V) -> (R, B) for R patched runs of a batch."""
        if self.foil is None:
            return _pick(logits.float().softmax(-1), self.answer)
        return _pick(logits, self.answer) - _pick(logits, self.foil)

    @property
    def name(self) -> str:
        return "probability" if self.foil is None else "logit difference"

    def at(self, n_tokens: int) -> Metric:
        """The same metric with its position counted from the start of an ``n_tokens`` prompt (-1 and n − 1 are
        one metric: a key for results computed once)."""
        return Metric(self.answer, self.foil, self.position % n_tokens)


@dataclass(frozen=True)
class Patching:
    """A patching sweep's results: the two baselines and, by kind, the metric of every patched run."""

    metric: Metric
    clean: float
    corrupted: float
    raw: dict[str, np.ndarray]  # kind -> (L, N) for POSITION_KINDS, (L, H) for "z"

    def recovered(self, kind: str) -> np.ndarray:
        """The recovered fraction of each patched run (NaN where clean and corrupted score the same)."""
        gap = self.clean - self.corrupted
        if abs(gap) < 1e-9:
            return np.full_like(self.raw[kind], np.nan)
        return (self.raw[kind] - self.corrupted) / gap

    @staticmethod
    def joined(metric: Metric, parts: Sequence[Patching]) -> Patching:
        """One result of sweeps over different kinds of the same prompts."""
        return Patching(metric, parts[0].clean, parts[0].corrupted, {k: v for p in parts for k, v in p.raw.items()})


def _device(model: Transformer) -> torch.device:
    return next(model.parameters()).device


def as_batch(model: Transformer, ids) -> torch.Tensor:
    """One id list (N,), several of one length, or a (B, N) tensor -> (B, N) on the model's device."""
    if isinstance(ids, torch.Tensor):
        batch = ids if ids.dim() == 2 else ids[None]
    else:
        rows = list(ids)
        rows = [rows] if rows and not isinstance(rows[0], Sequence | torch.Tensor) else [list(r) for r in rows]
        if len({len(r) for r in rows}) > 1:
            raise ValueError("the prompts of a batch must have the same number of tokens (patching compares positions)")
        batch = torch.tensor([[int(t) for t in r] for r in rows])
    return batch.to(_device(model))


def reuses_prefix(model: Transformer) -> bool:
    """Whether a patched run can start at the patched position: in a causal model nothing before it changes, so
    the receiving run's keys and values stand in for the positions before it (a KV cache, as in generation)."""
    return bool(model.cfg.causal) and model.rel_pos is None


def cache_run(
    model: Transformer, ids, kinds: Sequence[str] = PATCH_KINDS, keys: bool = False
) -> dict[str, torch.Tensor]:
    """One run's activations by hook name ((B, ...): B = 1 for one prompt), for donating or receiving; ``keys``:
    every layer's keys and values as well (a receiver whose patched runs start at the patched position)."""
    kept_kinds = (*kinds, "resid_pre", *(("k", "v") if keys else ()))
    names = {hook_name(k, i) for k in kept_kinds for i in range(model.cfg.n_layers)}
    kept: dict[str, torch.Tensor] = {}

    def keep(x: torch.Tensor, hook) -> None:
        kept[hook.name] = x.detach()

    with torch.no_grad(), hooks(model, [(name, keep) for name in sorted(names)]):
        model(as_batch(model, ids))
    return kept


def score(model: Transformer, ids, metric: Metric) -> float:
    """The metric of one plain run (averaged over a batch's prompts)."""
    with torch.no_grad():
        hidden = model(as_batch(model, ids))
        return float(metric(readout(model, hidden[:, metric.position])).double().mean())


def top_guesses(model: Transformer, ids: Sequence[int], position: int, k: int = 2) -> list[int]:
    """The k likeliest tokens of one plain run at ``position``."""
    with torch.no_grad():
        hidden = model(torch.tensor([list(ids)], device=_device(model)))
        return [int(t) for t in readout(model, hidden[:, position]).topk(k, dim=-1).indices[0]]


def run_from(
    model: Transformer,
    start: torch.Tensor,
    layer: int,
    metric: Metric,
    edit: Callable | None,
    name: str,
    prompts: int = 1,
    extra: Sequence[tuple[str, Callable]] = (),
    past: dict[str, torch.Tensor] | None = None,
    prefix: int = 0,
    until: int | None = None,
) -> torch.Tensor | None:
    """Run blocks ``layer`` … L − 1 on ``start`` (R·B, N − prefix, d_model), the stream entering ``layer`` for R
    runs of a batch of B prompts, with ``edit`` hooked on ``name`` (and the ``extra`` (name, hook) pairs); returns
    each run's metric averaged over the prompts (R,). ``prefix`` > 0 (a causal model, :func:`reuses_prefix`):
    ``start`` holds positions ``prefix`` … N − 1 only, and ``past`` (a :func:`cache_run` with keys) gives every
    layer's keys and values before them. ``until``: run blocks ``layer`` … ``until`` only, for what their hooks see,
    and return None."""
    cfg = model.cfg
    n = start.size(1)
    masks = model.build_masks(n, None, cfg.causal, start.device, prefix)
    # the relative bias (T5, MPNet): left out, a T5 decoder's unpatched run scored 0.82, not its plain 1.74
    extra_inputs = model.block_inputs(n, prefix)
    cache = None
    if prefix:
        cache, runs = KVCache(cfg.n_layers), start.size(0) // past[hook_name("k", layer)].size(0)
        for i in range(layer, cfg.n_layers):  # (B, H_kv, N, d_k) -> (R·B, H_kv, prefix, d_k), tiled as start is
            cache.layers[i] = tuple(past[hook_name(t, i)][:, :, :prefix].repeat(runs, 1, 1, 1) for t in "kv")
    with torch.no_grad(), hooks(model, [*([(name, edit)] if edit is not None else []), *extra]):
        x = start
        for i in range(layer, cfg.n_layers if until is None else until + 1):
            x = model.blocks[i](x, mask=masks[i], layer=i, cache=cache, **extra_inputs)
        if until is not None:
            return None
        x = model.hook_final(model.ln_f(x) if model.ln_f is not None else x)
        logits = readout(model, x[:, metric.position % (n + prefix) - prefix])  # (R·B, V)
        return metric(logits.view(-1, prompts, logits.size(-1))).double().mean(1)  # (R, B) -> (R,)


def _batch_size(n_tokens: int, prompts: int, prefix: bool) -> int:
    """Patched runs per batch: as many as MAX_BATCH holds; with ``prefix`` (runs from the batch's first position)
    fewer, for up to STARTS starting points, but never under MIN_RUNS."""
    most = max(1, MAX_BATCH // prompts)
    return min(most, max(MIN_RUNS, -(-n_tokens // STARTS))) if prefix else most


def _sweep_layer(model: Transformer, receiver: dict, donor: dict, kind: str, layer: int, metric: Metric) -> np.ndarray:
    """One layer of one kind: (N,) for a position kind, (H,) for z."""
    name = hook_name(kind, layer)
    start = receiver[hook_name("resid_pre", layer)]  # (B, N, d_model)
    B, N = start.shape[:2]
    width = N if kind in POSITION_KINDS else model.blocks[layer].attn.n_heads
    # a causal model's runs start at the first position their batch patches (never after the metric's): smaller
    # batches skip more of the text (STARTS, MIN_RUNS)
    reuse = kind in POSITION_KINDS and hook_name("k", layer) in receiver
    step = _batch_size(N, B, reuse)
    out = []
    for lo in range(0, width, step):
        which = torch.arange(lo, min(width, lo + step), device=start.device)  # (b,) the cell each run patches
        rows = torch.arange(len(which), device=start.device)
        prefix = min(lo, metric.position % N) if reuse else 0

        def edit(x: torch.Tensor, _hook, which=which, at=which - prefix, rows=rows) -> torch.Tensor:
            x = x.clone().view(len(which), B, *x.shape[1:])  # (b·B, ...) -> (b, B, ...)
            # position kinds: x (b, B, N − prefix, d_model), run r takes the donor's values at position which[r]
            # (row at[r] of the shortened run); z: x (b, B, H, N, d_k), run r takes head which[r]'s donated output
            x[rows, :, at] = donor[name][:, which].transpose(0, 1)
            return x.view(-1, *x.shape[2:])  # (b·B, ...)

        batch = start[:, prefix:].repeat(len(which), 1, 1)  # (b·B, N − prefix, d_model): run r, rows r·B … r·B + B − 1
        out.append(run_from(model, batch, layer, metric, edit, name, B, past=receiver, prefix=prefix).cpu())
    return torch.cat(out).numpy()


def patch_sweep(
    model: Transformer,
    receiver: dict[str, torch.Tensor],
    donor: dict[str, torch.Tensor],
    metric: Metric,
    kinds: Sequence[str] = PATCH_KINDS,
    progress: Callable[[float], None] | None = None,
) -> dict[str, np.ndarray]:
    """The metric of the receiving run with each cell of each kind taken from the donor: kind -> (L, N) or
    (L, H). ``receiver`` and ``donor`` come from :func:`cache_run` on prompts of the same length."""
    for kind in kinds:
        if kind not in PATCH_KINDS:
            raise ValueError(f"unknown patch kind {kind!r}; choose from {', '.join(PATCH_KINDS)}")
    L = model.cfg.n_layers
    work = [(kind, layer) for kind in kinds for layer in range(L)]
    cost = np.array([L - layer for _, layer in work], dtype=float)  # blocks each layer's runs go through
    done, raw = 0.0, {kind: [] for kind in kinds}
    for (kind, layer), c in zip(work, cost, strict=True):
        raw[kind].append(_sweep_layer(model, receiver, donor, kind, layer, metric))
        done += c
        if progress is not None:
            progress(done / cost.sum())
    return {kind: np.stack(rows) for kind, rows in raw.items()}


def activation_patching(
    model: Transformer,
    clean: Sequence[int],
    corrupted: Sequence[int],
    metric: Metric,
    kinds: Sequence[str] = PATCH_KINDS,
    progress: Callable[[float], None] | None = None,
) -> Patching:
    """Patch the clean run's activations into the corrupted run, cell by cell (see the module's docstring). Computed
    once per model, inputs and kind, for every caller (model/analysis/memo.py)."""
    clean, corrupted = as_batch(model, clean), as_batch(model, corrupted)
    if clean.shape != corrupted.shape:
        raise ValueError(
            f"the clean prompt has {clean.size(-1)} tokens and the corrupted one {corrupted.size(-1)}: patching "
            "compares position with position, so they must have the same length"
            + (f" (and the batches {clean.size(0)} and {corrupted.size(0)} prompts)" if clean.size(0) > 1 else "")
        )
    if len(kinds) > 1:  # each kind swept and kept on its own: a sweep of other kinds later reads what they share
        parts = [
            activation_patching(model, clean, corrupted, metric, (kind,), progress_part(progress, i, len(kinds)))
            for i, kind in enumerate(kinds)
        ]
        return Patching.joined(metric, parts)
    key = ("activation_patching", ids_key(clean), ids_key(corrupted), metric.at(clean.size(-1)), tuple(kinds))

    def make() -> Patching:
        donor, receiver = cache_run(model, clean, kinds), cache_run(model, corrupted, kinds, reuses_prefix(model))
        raw = patch_sweep(model, receiver, donor, metric, kinds, progress)
        return Patching(metric, score(model, clean, metric), score(model, corrupted, metric), raw)

    return once(model, key, make)


def progress_part(progress: Callable[[float], None] | None, i: int, n: int) -> Callable[[float], None] | None:
    """Part ``i`` of ``n`` equal parts of a ``progress`` callback."""
    return None if progress is None else lambda f: progress((i + f) / n)


def ids_key(batch: torch.Tensor) -> tuple:
    """(B, N) ids as a key: nested tuples."""
    return tuple(tuple(int(t) for t in row) for row in batch.tolist())


def patching_passes(n_layers: int, n_tokens: int, n_heads: int, kinds: Sequence[str], prefix: bool = False) -> float:
    """How many full forward passes of one prompt a sweep costs (for an estimate before it runs); ``prefix``: the
    position runs start at their batch's first position (:func:`reuses_prefix`)."""
    per_cell = (n_layers + 1) / 2
    share = 1.0
    if prefix:  # each batch computes the positions from its first one on (the metric at the last position)
        step = _batch_size(n_tokens, 1, True)
        done = sum(min(step, n_tokens - lo) * (n_tokens - lo) for lo in range(0, n_tokens, step))
        share = done / n_tokens**2
    return sum(per_cell * (n_heads if kind == HEAD_KIND else n_tokens * share) for kind in kinds)
