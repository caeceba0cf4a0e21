"""Hook functions on any hook point, TransformerLens-style: read an activation, or return a replacement.

    def zero_head(z, hook):  # z: (B, H, N, d_k) at blocks.3.attn.hook_z
        z[:, 1] = 0.0
        return z

    logits = run_with_hooks(model, ids, fwd_hooks=[("blocks.3.attn.hook_z", zero_head)], return_type="logits")
    run_with_hooks(model, ids, fwd_hooks=[(lambda name: name.endswith("hook_pattern"), keep)])

Hook names are module paths (``hook_points(model)`` lists them all): per block ``hook_resid_pre``,
``hook_attn_in``, ``attn.hook_q``/``hook_k``/``hook_v``/``hook_scores``/``hook_pattern``/``hook_z``/``hook_out``,
``hook_resid_mid``, ``hook_mlp_in``, ``ff.hook_hidden``, ``hook_mlp_out``, ``hook_resid_post``; and
``hook_embed``, ``hook_final`` (after the final norm) on the model. Shapes are in docs/capture-api.md.

Hooks live only inside the call (or the ``with hooks(...)`` block) and are removed in ``finally``, also when a
hook raises. As with :func:`model.capture.capture`, a hook acts only on the thread that registered it, so a
model shared by a server's users is never edited for anyone else.
"""

from __future__ import annotations

import contextlib
import difflib
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

import torch
from torch import nn

from model.capture import hook_points
from model.errors import foreign_module


@dataclass(frozen=True)
class Hook:
    """What a hook function is told about where it runs."""

    name: str  # "blocks.3.attn.hook_z"

    @property
    def layer(self) -> int | None:
        """The block's index (None for hook_embed and hook_final)."""
        parts = self.name.split(".")
        return int(parts[1]) if parts[0] == "blocks" else None


HookFn = Callable[[torch.Tensor, Hook], torch.Tensor | None]
Target = str | Callable[[str], bool]


def resolve(model: nn.Module, target: Target) -> list[str]:
    """The hook names a target means: one exact name, or every name a filter accepts."""
    points = hook_points(model)
    if callable(target):
        names = [n for n in points if target(n)]
        if not names:
            raise ValueError("the hook filter matches no hook point of this model")
        return names
    if target not in points:
        close = difflib.get_close_matches(target, list(points), n=3)
        hint = f"; did you mean {', '.join(close)}?" if close else "; hook_points(model) lists them"
        raise ValueError(f"{target!r} is not a hook point of this model{hint}")
    return [target]


@contextlib.contextmanager
def hooks(model: nn.Module, fwd_hooks: Sequence[tuple[Target, HookFn]]) -> Iterator[None]:
    """Attach hook functions for the forward passes run inside the block; ``fn(tensor, hook)`` returns a
    replacement tensor (same shape) or None to keep the value."""
    points = hook_points(model)
    if not points:
        raise TypeError(foreign_module(model, "run_with_hooks"))
    plan = [(name, fn) for target, fn in fwd_hooks for name in resolve(model, target)]
    owner = threading.get_ident()
    handles: list[torch.utils.hooks.RemovableHandle] = []

    def wrap(name: str, fn: HookFn):
        hook = Hook(name)

        def run(_mod: nn.Module, _inp: tuple, out: torch.Tensor) -> torch.Tensor | None:
            if threading.get_ident() != owner:
                return None
            new = fn(out, hook)
            if new is not None and new.shape != out.shape:
                shapes = f"shape {tuple(new.shape)}; it must keep {tuple(out.shape)}"
                raise ValueError(f"the hook on {name} returned {shapes}")
            return new

        return run

    try:
        for name, fn in plan:
            handles.append(points[name].register_forward_hook(wrap(name, fn)))
        yield
    finally:
        for handle in handles:
            handle.remove()


def readout(model: nn.Module, hidden: torch.Tensor) -> torch.Tensor:
    """hidden (B, N, d_model), after the final norm -> logits (B, N, V) through the model's own head: the
    next-token head of a decoder, else the masked-language-model head."""
    cfg = model.cfg
    if cfg.lm_head:
        return model.lm_logits(hidden)
    if getattr(model, "mlm", None) is not None:
        return model.mlm_logits(hidden)
    raise ValueError("this model has no output head (neither next-token nor masked-language-model)")


def run_with_hooks(
    model: nn.Module,
    ids: torch.Tensor | Sequence[int],
    fwd_hooks: Sequence[tuple[Target, HookFn]] = (),
    attention_mask: torch.Tensor | None = None,
    token_type_ids: torch.Tensor | None = None,
    *,
    return_type: str = "hidden",
    grad: bool = False,
    **forward: object,
) -> torch.Tensor:
    """One forward pass with hook functions attached. ids: (B, N) or a list of ids (one sequence).

    return_type "hidden" gives the final hidden states (B, N, d_model), "logits" the head's (B, N, V).
    ``grad=True`` keeps the graph (for gradients through a patched run); otherwise no gradients are kept.
    ``forward`` passes the teaching switches (``causal``, ``scale``, ``positions``) on to the model."""
    if return_type not in ("hidden", "logits"):
        raise ValueError("return_type must be 'hidden' or 'logits'")
    if not isinstance(ids, torch.Tensor):
        ids = torch.tensor([list(ids)])
    device = next(model.parameters()).device
    context = contextlib.nullcontext() if grad else torch.no_grad()
    with context, hooks(model, fwd_hooks):
        hidden = model(ids.to(device), attention_mask, token_type_ids, **forward)
        return readout(model, hidden) if return_type == "logits" else hidden
