"""Path patching (Wang et al., 2022, "Interpretability in the Wild"; Goldowsky-Dill et al., 2023): how much of the
answer one head sends along one path — straight to the logits, or into chosen receiver heads' queries, keys or
values — rather than through everything after it.

As activation patching here (model/analysis/patching.py), clean activations go into the corrupted run and the
result is the recovered fraction. For each sender head:

1. Run the corrupted prompt with the sender's output z taken from the clean run and every other head's z frozen
   at its corrupted value (the feed-forward layers recompute). With the logits as receiver, this run's metric is
   the answer: the sender's effect through the residual stream and the MLPs, and through no other head.
2. With receiver heads, step 1 only records the receivers' inputs (their q, k or v at every position); a second
   corrupted run takes those inputs and nothing else, and its metric is the answer: the sender's effect through
   the receivers alone.

Senders at or after the first receiver's layer have no path and are NaN. Under grouped-query attention a key or
value receiver is its key/value head, shared by its group. A batch of equal-length pairs works as in patching.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import torch

from model.analysis.memo import once
from model.analysis.patching import Metric, Patching, as_batch, cache_run, ids_key, run_from, score
from model.capture import hook_name
from model.transformer import Transformer

RECEIVER_INPUTS = ("q", "k", "v")
MAX_RUNS = 32  # rows per batched run (senders × prompts)
Receiver = tuple[int, int, str]  # (layer, head, "q" | "k" | "v")


def check_receivers(model: Transformer, receivers: Sequence[Receiver] | str) -> list[Receiver]:
    """The receivers as (layer, head, input) triples ([] for the logits), refused in words when one is not there."""
    if isinstance(receivers, str):
        if receivers != "logits":
            raise ValueError("receivers are 'logits' or (layer, head, 'q' | 'k' | 'v') triples")
        return []
    out = []
    for layer, head, what in receivers:
        if what not in RECEIVER_INPUTS:
            raise ValueError(f"a receiver head reads its {', '.join(RECEIVER_INPUTS)}, not {what!r}")
        if not 0 <= layer < model.cfg.n_layers or not 0 <= head < model.blocks[layer].attn.n_heads:
            raise ValueError(f"L{layer}H{head} is not a head of this model")
        out.append((int(layer), int(head), what))
    if not out:
        raise ValueError("name at least one receiver head, or 'logits'")
    return out


def _slot(model: Transformer, head: int, layer: int, what: str) -> int:
    """The index a receiver's input has in its hook point: the head, or its key/value head."""
    return head if what == "q" else head // model.blocks[layer].attn.group


def path_patching(
    model: Transformer,
    clean,
    corrupted,
    metric: Metric,
    receivers: Sequence[Receiver] | str = "logits",
    progress: Callable[[float], None] | None = None,
) -> Patching:
    """Every head as the sender, along the path to ``receivers``: a :class:`Patching` whose raw["z"] is (L, H).
    Computed once per model and inputs, for every caller (model/analysis/memo.py)."""
    rec = check_receivers(model, receivers)
    clean, corrupted = as_batch(model, clean), as_batch(model, corrupted)
    if clean.shape != corrupted.shape:
        raise ValueError("the clean and corrupted prompts must have the same number of tokens")
    key = ("path_patching", ids_key(clean), ids_key(corrupted), metric.at(clean.size(-1)), tuple(rec))
    return once(model, key, lambda: _path_patching(model, clean, corrupted, metric, rec, progress))


def _path_patching(model, clean, corrupted, metric, rec, progress) -> Patching:
    L, H, B = model.cfg.n_layers, model.cfg.n_heads, clean.size(0)
    donor, frozen = cache_run(model, clean, ("z",)), cache_run(model, corrupted, ("z",))
    stop = min((layer for layer, _, _ in rec), default=L)  # senders must come before every receiver
    raw = np.full((L, H), np.nan)
    per = max(1, MAX_RUNS // B)
    todo = [(layer, lo) for layer in range(stop) for lo in range(0, H, per)]
    for step, (layer, lo) in enumerate(todo):
        heads = list(range(lo, min(H, lo + per)))
        raw[layer, heads] = _senders(model, layer, heads, donor, frozen, metric, rec, B)
        if progress is not None:
            progress((step + 1) / len(todo))
    return Patching(metric, score(model, clean, metric), score(model, corrupted, metric), {"z": raw})


def _senders(model, layer, heads, donor, frozen, metric, rec, prompts: int) -> np.ndarray:
    """The path-patched metric for ``heads`` of ``layer`` as senders, one batched run each step: (len(heads),)."""
    R, B = len(heads), prompts
    rows = torch.arange(R)
    start = frozen[hook_name("resid_pre", layer)].repeat(R, 1, 1)  # (R·B, N, d_model)

    def freeze(x: torch.Tensor, hook) -> torch.Tensor:
        # x (R·B, H, N, d_k): every head at its corrupted value; run r's sender takes its clean value
        out = frozen[hook.name].repeat(R, 1, 1, 1).view(R, B, *x.shape[1:])  # (R, B, H, N, d_k)
        if hook.layer == layer:
            out = out.clone()
            out[rows, :, heads] = donor[hook.name][:, heads].transpose(0, 1)
        return out.view(x.shape)

    z_names = [hook_name("z", i) for i in range(layer, model.cfg.n_layers)]
    if not rec:
        return run_from(model, start, layer, metric, None, "", B, extra=[(n, freeze) for n in z_names]).cpu().numpy()
    taken: dict[str, torch.Tensor] = {}
    names = sorted({hook_name(what, lay) for lay, _, what in rec})

    def keep(x: torch.Tensor, hook) -> None:
        taken[hook.name] = x.detach()

    recording = [*((n, freeze) for n in z_names), *((n, keep) for n in names)]
    first, last = min(lay for lay, _, _ in rec), max(lay for lay, _, _ in rec)
    # the recording run stops at the last receiver's block: nothing after it is read (SmolLM2, one receiver in
    # layer 23: 299 instead of 437 blocks for the senders before it)
    run_from(model, start, layer, metric, None, "", B, extra=recording, until=last)

    def receive(x: torch.Tensor, hook) -> torch.Tensor:
        # x (R·B, H or H_kv, N, d_k): each receiver's slot takes what it received in step 1
        x = x.clone()
        for lay, head, what in rec:
            if hook_name(what, lay) == hook.name:
                slot = _slot(model, head, lay, what)
                x[:, slot] = taken[hook.name][:, slot]
        return x

    again = frozen[hook_name("resid_pre", first)].repeat(R, 1, 1)  # (R·B, N, d_model)
    return run_from(model, again, first, metric, None, "", B, extra=[(n, receive) for n in names]).cpu().numpy()
