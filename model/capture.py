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
from model.hooks import HookPoint

#: kind -> hook path below ``blocks.{layer}``, with the shape each holds.
KIND_PATHS: dict[str, str] = {
    "attn_in": "hook_attn_in",  # (B, N, d_model), the attention sublayer's input
    "q": "attn.hook_q",  # (B, H, N, d_k)
    "k": "attn.hook_k",  # (B, H, M, d_k)
    "v": "attn.hook_v",  # (B, H, M, d_k)
    "scores": "attn.hook_scores",  # (B, H, N, M), scaled, masked cells -inf
    "pattern": "attn.hook_pattern",  # (B, H, N, M)
    "z": "attn.hook_z",  # (B, H, N, d_k), per-head output before W_o
    "attn_out": "attn.hook_out",  # (B, N, d_model)
    "cross_pattern": "cross.hook_pattern",  # (B, H, N, S): a decoder's cross-attention on the encoder's S tokens
    "c2p": "attn.hook_c2p",  # (B, H, N, N): DeBERTa's content→position term of the scores, scaled
    "p2c": "attn.hook_p2c",  # (B, H, N, N): its position→content term
    "resid_pre": "hook_resid_pre",  # (B, N, d_model)
    "resid_mid": "hook_resid_mid",  # (B, N, d_model)
    "resid_mid_cross": "hook_resid_mid_cross",  # (B, N, d_model): a decoder's stream after its cross-attention
    "resid_post": "hook_resid_post",  # (B, N, d_model)
    "mlp_in": "hook_mlp_in",  # (B, N, d_model), what the feed-forward reads (LN(x) in a pre-norm block)
    "mlp_hidden": "ff.hook_hidden",  # (B, N, d_ff), after the activation (SwiGLU: silu(gate) · up)
    "mlp_out": "hook_mlp_out",  # (B, N, d_model), the feed-forward's output before it joins the stream
    "router_logits": "ff.hook_router",  # (B, N, E), a mixture-of-experts layer's router (model/moe.py)
    "expert_weights": "ff.hook_weights",  # (B, N, E), each expert's weight on each token: k nonzero per row
    "sink": "attn.hook_sink",  # (B, H, N), the share of each row a learned sink takes (gpt-oss)
}
KINDS: tuple[str, ...] = tuple(KIND_PATHS)

_points_guard = threading.Lock()


def hook_name(kind: str, layer: int) -> str:
    """``hook_name("pattern", 0) == "blocks.0.attn.hook_pattern"``."""
    if kind not in KIND_PATHS:
        raise ValueError(f"unknown capture kind {kind!r}; choose from {', '.join(KINDS)}")
    return f"blocks.{layer}.{KIND_PATHS[kind]}"


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
        return torch.stack([self.get(kind, i) for i in layers])

    @property
    def nbytes(self) -> int:
        return sum(t.numel() * t.element_size() for t in self.activations.values())


def _select(names: Iterable[str], layers: Iterable[int] | None, kinds: Iterable[str] | None) -> list[str]:
    kinds = list(KINDS) if kinds is None else list(kinds)
    for kind in kinds:
        hook_name(kind, 0)  # validates the kind
    available = set(names)
    n_layers = len({n.split(".")[1] for n in available if n.startswith("blocks.")})
    layers = list(range(n_layers)) if layers is None else list(layers)
    for layer in layers:
        if not 0 <= layer < n_layers:
            raise ValueError(f"layer {layer} does not exist; the model has {n_layers} layers")
    return [hook_name(k, i) for i in layers for k in kinds if hook_name(k, i) in available]


def _named(points: Mapping[str, HookPoint], names_filter) -> list[str]:
    """The hook names ``names_filter`` keeps, as TransformerLens's ``run_with_cache`` takes it: a callable
    ``name -> bool``, one name, or a list of names (unknown names are refused, with where the names come from)."""
    if callable(names_filter):
        return [n for n in points if names_filter(n)]
    wanted = [names_filter] if isinstance(names_filter, str) else list(names_filter)
    unknown = [n for n in wanted if n not in points]
    if unknown:
        raise ValueError(
            f"no hook point {', '.join(map(repr, unknown[:3]))} in this model; names look like "
            f"{next(iter(points), 'blocks.0.attn.hook_pattern')!r} (model.capture.hook_points(model) lists them)"
        )
    return [n for n in points if n in set(wanted)]


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
    """
    if ablate_mode not in ("output", "pattern"):
        raise ValueError("ablate_mode must be 'output' or 'pattern'")
    points = hook_points(model)
    if not points:  # a module that is not ours (the post's own encoder, say) would capture nothing
        raise TypeError(foreign_module(model, "capture"))
    trace = Trace(names=tuple(points))
    if names_filter is not None and (layers is not None or kinds is not None):
        raise ValueError("give names_filter or layers/kinds, not both")
    wanted = _select(points, layers, kinds) if names_filter is None else _named(points, names_filter)
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

    def recorder(name: str):
        def hook(_mod: nn.Module, _inp: tuple, out: torch.Tensor) -> None:
            if not mine():
                return
            t = out.detach()
            if dtype is not None and t.is_floating_point():
                t = t.to(dtype)
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
        ) as trace,
    ):
        hidden = model(ids, attention_mask, token_type_ids, causal=causal, scale=scale, positions=positions)
    return hidden.detach().to("cpu"), trace
