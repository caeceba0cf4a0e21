"""Capture what happens inside attention, and intervene on it, through the model's hook points.

    with capture(model, layers=[0, 1], kinds=["pattern"]) as trace:
        model(ids)
    trace.get("pattern", 0)  # (B, H, N, N), detached, on the CPU

Hooks live only inside the ``with`` block and are removed in ``finally``. A model object is shared by
every user of a server, and captures on it run at the same time: each capture's hooks act only on the
thread that opened it, and everything a capture records or edits is its own (per call), so two threads never
see each other's activations and nobody waits for another's forward pass. (A lock per model used to
serialise captures: with 30 students' first pages at once, its holder's forward pass stretched from 20 ms to
0.6 s under the GIL and the queue behind it reached 3.5 s; see bench/RESULTS.md.)
"""

from __future__ import annotations

import contextlib
import threading
import weakref
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field

import torch
from torch import nn

from model.errors import foreign_module
from model.hooks import KIND_PATHS, HookPoint, hook_name, named_hooks, select_names
from model.hooks import KINDS as KINDS  # re-exported: model.capture is where callers import the kinds from
from model.memory import RESERVE

_points_guard = threading.Lock()
_points_cache: weakref.WeakKeyDictionary[nn.Module, dict[str, HookPoint]] = weakref.WeakKeyDictionary()


def hook_points(model: nn.Module) -> dict[str, HookPoint]:
    """Every hook point of ``model`` by module path (walked once per model, then remembered)."""
    points = _points_cache.get(model)
    if points is None:
        points = {name: mod for name, mod in model.named_modules() if isinstance(mod, HookPoint)}
        with _points_guard:
            _points_cache[model] = points
    return points


@dataclass
class Trace:
    """What one capture recorded: detached CPU tensors by hook name."""

    names: tuple[str, ...]  # every hook point the model offers
    activations: dict[str, torch.Tensor] = field(default_factory=dict)
    stacks: dict[str, torch.Tensor] = field(default_factory=dict)  # kind -> (L, ...) its layers are written into

    def __contains__(self, name: str) -> bool:
        return name in self.activations

    def __getitem__(self, name: str) -> torch.Tensor:
        return self.activations[name]

    def get(self, kind: str, layer: int) -> torch.Tensor:
        name = hook_name(kind, layer)
        if name not in self.activations:
            raise KeyError(f"{name} was not captured; pass kinds=[{kind!r}] and include layer {layer}")
        return self.activations[name]

    def layers(self, kind: str) -> list[int]:
        suffix = "." + KIND_PATHS[kind]
        return sorted(int(n.split(".")[1]) for n in self.activations if n.endswith(suffix))

    def stack(self, kind: str) -> torch.Tensor:
        """All captured layers of one kind stacked: (L, ...)."""
        layers = self.layers(kind)
        if not layers:
            raise KeyError(f"no {kind!r} activations were captured")
        whole, parts = self.stacks.get(kind), [self.get(kind, i) for i in layers]
        if whole is not None and [p.data_ptr() for p in parts] == [w.data_ptr() for w in whole]:
            return whole  # every layer written in place (capture's ``stacked``): no second copy
        return torch.stack(parts)

    @property
    def nbytes(self) -> int:
        return sum(t.numel() * t.element_size() for t in self.activations.values())


@contextlib.contextmanager
def capture(
    model: nn.Module,
    layers: Iterable[int] | None = None,
    kinds: Iterable[str] | None = None,
    *,
    dtype: torch.dtype | None = None,
    ablate: Iterable[tuple[int, int]] = (),
    ablate_mode: str = "output",
    replace_patterns: Mapping[tuple[int, int], str | torch.Tensor] | None = None,
    names_filter: Callable[[str], bool] | Iterable[str] | str | None = None,
    stacked: Iterable[str] = (),
) -> Iterator[Trace]:
    """Record activations (and apply interventions) for forward passes run inside the block.

    layers/kinds: what to keep (None = all); memory grows only with what is asked for.
    names_filter: instead of layers/kinds, the hook names to keep — a callable ``name -> bool``, a name or a list
        (TransformerLens's argument; e.g. ``lambda n: n.endswith("hook_pattern")``).
    dtype: store floating tensors in this dtype (e.g. torch.float16 to halve memory).
    ablate: (layer, head) pairs to switch off; ablate_mode "output" zeroes the head's output z,
        "pattern" zeroes its attention pattern (same effect on the output, visible in the pattern).
    replace_patterns: {(layer, head): "uniform" | tensor (N, M)}; "uniform" spreads the weight evenly
        over the keys the mask allows.
    stacked: kinds whose layers are written into one (L, ...) tensor as they come (``trace.stack`` returns it,
        no copy) and not kept apart: half the memory, each layer's own tensor freed for the next layer to reuse
        (SmolLM2's patterns at 512 tokens: 283 MB instead of 566). For one forward pass: a second one writes
        over the first's.
    """
    if ablate_mode not in ("output", "pattern"):
        raise ValueError("ablate_mode must be 'output' or 'pattern'")
    points = hook_points(model)
    if not points:  # a module that is not ours (the post's own encoder, say) would capture nothing
        raise TypeError(foreign_module(model, "capture"))
    trace = Trace(names=tuple(points))
    if names_filter is not None and (layers is not None or kinds is not None):
        raise ValueError("give names_filter or layers/kinds, not both")
    wanted = select_names(points, layers, kinds) if names_filter is None else named_hooks(points, names_filter)
    ablate = sorted(set(ablate))
    replace_patterns = dict(replace_patterns or {})
    if ablate or replace_patterns:  # validate head indices only when there is something to validate
        blocks = getattr(model, "blocks", [])
        for layer, head in [*ablate, *replace_patterns]:
            heads = getattr(blocks[layer].attn, "n_heads", None) if 0 <= layer < len(blocks) else None
            if heads is None or not 0 <= head < heads:
                raise ValueError(f"head ({layer}, {head}) does not exist in this model")

    owner = threading.get_ident()
    handles: list[torch.utils.hooks.RemovableHandle] = []
    last_scores: dict[int, torch.Tensor] = {}  # per-call state for "uniform" replacement

    def mine() -> bool:
        return threading.get_ident() == owner

    stacked = set(stacked)
    slots = {n: (k, [m for m in wanted if m.endswith("." + KIND_PATHS[k])]) for k in stacked for n in wanted
             if n.endswith("." + KIND_PATHS[k])}  # fmt: skip

    def recorder(name: str):
        def hook(_mod: nn.Module, _inp: tuple, out: torch.Tensor) -> None:
            if not mine():
                return
            t = out.detach()
            if dtype is not None and t.is_floating_point():
                t = t.to(dtype)
            kind, names = slots.get(name, (None, ()))
            whole = trace.stacks.get(kind) if kind else None
            if kind and whole is None:  # (L, ...) on the CPU, written layer by layer
                whole = trace.stacks[kind] = RESERVE.empty((len(names), *t.shape), t.dtype)  # memory touched ahead
            if whole is not None and whole.shape[1:] == t.shape and whole.dtype == t.dtype:
                trace.activations[name] = whole[names.index(name)].copy_(t)
            else:  # not stacked, or a layer unlike the first: kept apart
                trace.activations[name] = t if t.device.type == "cpu" else t.to("cpu")

        return hook

    def scores_keeper(layer: int):
        def hook(_mod: nn.Module, _inp: tuple, out: torch.Tensor) -> None:
            if mine():
                last_scores[layer] = out

        return hook

    def pattern_editor(layer: int):
        def hook(_mod: nn.Module, _inp: tuple, out: torch.Tensor) -> torch.Tensor | None:
            if not mine():
                return None
            out = out.clone()
            for (lay, head), new in replace_patterns.items():
                if lay != layer:
                    continue
                if isinstance(new, str):
                    if new != "uniform":
                        raise ValueError(f"unknown pattern replacement {new!r}; use 'uniform' or a tensor")
                    allowed = torch.isfinite(last_scores[layer][:, head]).to(out.dtype)  # (B, N, M)
                    out[:, head] = allowed / allowed.sum(-1, keepdim=True).clamp_min(1.0)
                else:
                    out[:, head] = torch.as_tensor(new, dtype=out.dtype, device=out.device)
            if ablate_mode == "pattern":
                for lay, head in ablate:
                    if lay == layer:
                        out[:, head] = 0.0
            return out

        return hook

    def z_editor(layer: int):
        def hook(_mod: nn.Module, _inp: tuple, out: torch.Tensor) -> torch.Tensor | None:
            if not mine():
                return None
            out = out.clone()
            for lay, head in ablate:
                if lay == layer:
                    out[:, head] = 0.0  # (B, N, d_k) of this head
            return out

        return hook

    try:
        # Interventions first: hooks run in registration order, so recorders see edited values.
        uniform_layers = {lay for (lay, _), new in replace_patterns.items() if isinstance(new, str)}
        for layer in sorted(uniform_layers):
            handles.append(points[hook_name("scores", layer)].register_forward_hook(scores_keeper(layer)))
        pattern_layers = {lay for lay, _ in replace_patterns}
        if ablate_mode == "pattern":
            pattern_layers |= {lay for lay, _ in ablate}
        for layer in sorted(pattern_layers):
            handles.append(points[hook_name("pattern", layer)].register_forward_hook(pattern_editor(layer)))
        if ablate_mode == "output":
            for layer in sorted({lay for lay, _ in ablate}):
                handles.append(points[hook_name("z", layer)].register_forward_hook(z_editor(layer)))
        for name in wanted:
            handles.append(points[name].register_forward_hook(recorder(name)))
        yield trace
    finally:
        for handle in handles:
            handle.remove()
        last_scores.clear()


def leftover_hooks(model: nn.Module) -> int:
    """How many forward hooks are attached anywhere in ``model`` (0 after every capture)."""
    return sum(len(m._forward_hooks) + len(m._forward_pre_hooks) for m in model.modules())


def run_with_cache(
    model: nn.Module,
    ids: torch.Tensor,
    attention_mask: torch.Tensor | None = None,
    token_type_ids: torch.Tensor | None = None,
    *,
    layers: Iterable[int] | None = None,
    kinds: Iterable[str] | None = None,
    causal: bool | None = None,
    scale: bool = True,
    positions: bool = True,
    dtype: torch.dtype | None = None,
    ablate: Iterable[tuple[int, int]] = (),
    ablate_mode: str = "output",
    replace_patterns: Mapping[tuple[int, int], str | torch.Tensor] | None = None,
    names_filter: Callable[[str], bool] | Iterable[str] | str | None = None,
    stacked: Iterable[str] = (),
) -> tuple[torch.Tensor, Trace]:
    """One eval-mode, no-grad forward pass with capture. Returns (hidden (B, N, d) on CPU, trace).

    ``no_grad``, not ``inference_mode``: what it returns are ordinary tensors, so a notebook can go on with
    them (``model.lm_logits(hidden)`` on an inference tensor raises "Inference tensors cannot be saved for
    backward" while the weights require grad)."""
    if model.training:
        raise ValueError("run_with_cache needs a model in eval() mode (shared models are never switched)")
    with (
        torch.no_grad(),
        capture(
            model,
            layers,
            kinds,
            dtype=dtype,
            ablate=ablate,
            ablate_mode=ablate_mode,
            replace_patterns=replace_patterns,
            names_filter=names_filter,
            stacked=stacked,
        ) as trace,
    ):
        hidden = model(ids, attention_mask, token_type_ids, causal=causal, scale=scale, positions=positions)
    return hidden.detach().to("cpu"), trace
