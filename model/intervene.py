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

Backward hooks see the gradient at a hook point, TransformerLens's ``bwd_hooks``: ``fn(grad, hook)`` returns a
replacement gradient or None. ``run_with_hooks(..., bwd_hooks=[...], loss=fn)`` runs the backward pass of
``fn(output)`` inside the call; in a ``with hooks(...) as taken`` block, ``torch.autograd.grad(loss, taken)``
does. Gradients are taken only with respect to the hooked activations, so no parameter's ``.grad`` changes on a
shared model.

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


def _checked(name: str, new: torch.Tensor | None, old: torch.Tensor, what: str) -> torch.Tensor | None:
    if new is not None and new.shape != old.shape:
        shapes = f"shape {tuple(new.shape)}; it must keep {tuple(old.shape)}"
        raise ValueError(f"the {what} hook on {name} returned {shapes}")
    return new


@contextlib.contextmanager
def hooks(
    model: nn.Module,
    fwd_hooks: Sequence[tuple[Target, HookFn]] = (),
    bwd_hooks: Sequence[tuple[Target, HookFn]] = (),
) -> Iterator[list[torch.Tensor]]:
    """Attach hook functions for the forward passes run inside the block; ``fn(tensor, hook)`` returns a
    replacement tensor (same shape) or None to keep the value. A backward hook ``fn(grad, hook)`` is called with
    the gradient at its hook point when a backward pass reaches it (its return replaces the gradient flowing on).

    The block yields a list that gathers, pass by pass, the activations the backward hooks watch: the inputs to
    give ``torch.autograd.grad``. A backward hook needs the forward pass to run with gradients enabled."""
    points = hook_points(model)
    if not points:
        raise TypeError(foreign_module(model, "run_with_hooks"))
    plan = [(name, fn) for target, fn in fwd_hooks for name in resolve(model, target)]
    back = [(name, fn) for target, fn in bwd_hooks for name in resolve(model, target)]
    owner = threading.get_ident()
    handles: list[torch.utils.hooks.RemovableHandle] = []
    taken: list[torch.Tensor] = []

    def wrap(name: str, fn: HookFn):
        hook = Hook(name)

        def run(_mod: nn.Module, _inp: tuple, out: torch.Tensor) -> torch.Tensor | None:
            if threading.get_ident() != owner:
                return None
            return _checked(name, fn(out, hook), out, "forward")

        return run

    def watch(name: str, fn: HookFn):
        hook = Hook(name)

        def run(_mod: nn.Module, _inp: tuple, out: torch.Tensor) -> torch.Tensor | None:
            if threading.get_ident() != owner or not out.requires_grad:
                return None
            # a view of its own: the gradient it receives is what flows back from this point only, even where
            # the model passes the same tensor object on to two hook points
            mine = out.view_as(out)
            mine.register_hook(lambda grad: _checked(name, fn(grad, hook), grad, "backward"))
            taken.append(mine)
            return mine

        return run

    try:
        for name, fn in plan:
            handles.append(points[name].register_forward_hook(wrap(name, fn)))
        for name, fn in back:  # after the forward hooks: the gradient is taken at the value they leave
            handles.append(points[name].register_forward_hook(watch(name, fn)))
        yield taken
    finally:
        for handle in handles:
            handle.remove()


def heads_off(model: nn.Module, ablate: Sequence[tuple[int, int]] = ()):
    """Inside the block (``with heads_off(model, ((0, 3),)):``), the (layer, head) pairs' outputs z are zeroed, as
    the Attention options' "switch heads off" does in :func:`model.observe.observe`; nothing with no pairs."""

    def zero(heads: list[int]):
        def hook(z: torch.Tensor, _hook) -> torch.Tensor:
            z = z.clone()
            z[:, heads] = 0.0  # (B, H, N, d_k): these heads' outputs
            return z

        return hook

    layers = sorted({layer for layer, _ in ablate})
    plan = [(f"blocks.{layer}.attn.hook_z", zero([h for lay, h in ablate if lay == layer])) for layer in layers]
    return hooks(model, plan) if plan else contextlib.nullcontext()


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
    bwd_hooks: Sequence[tuple[Target, HookFn]] = (),
    loss: Callable[[torch.Tensor], torch.Tensor] | None = None,
    return_type: str = "hidden",
    grad: bool = False,
    **forward: object,
) -> torch.Tensor:
    """One forward pass with hook functions attached. ids: (B, N) or a list of ids (one sequence).

    return_type "hidden" gives the final hidden states (B, N, d_model), "logits" the head's (B, N, V).
    ``grad=True`` keeps the graph (for gradients through a patched run); otherwise no gradients are kept.
    ``bwd_hooks`` with ``loss`` (output -> a number, e.g. ``lambda logits: logits[0, -1, answer]``): the backward
    pass of that number runs inside the call, and each backward hook sees its point's gradient; the output comes
    back detached. ``forward`` passes the teaching switches (``causal``, ``scale``, ``positions``) on to the model."""
    if return_type not in ("hidden", "logits"):
        raise ValueError("return_type must be 'hidden' or 'logits'")
    if bool(bwd_hooks) != (loss is not None):
        raise ValueError("backward hooks need a loss (the number whose gradient they see), and a loss needs them")
    if not isinstance(ids, torch.Tensor):
        ids = torch.tensor([list(ids)])
    device = next(model.parameters()).device
    backward = loss is not None
    context = contextlib.nullcontext() if grad or backward else torch.no_grad()
    with torch.inference_mode(False), context, torch.enable_grad() if backward else contextlib.nullcontext():
        with hooks(model, fwd_hooks, bwd_hooks) as taken:
            hidden = model(ids.to(device), attention_mask, token_type_ids, **forward)
            out = readout(model, hidden) if return_type == "logits" else hidden
            if backward:
                value = loss(out)
                if value.numel() != 1:
                    raise ValueError(f"the loss must be one number; it has shape {tuple(value.shape)}")
                if taken:
                    torch.autograd.grad(value, taken, allow_unused=True)
                return out.detach()
            return out
