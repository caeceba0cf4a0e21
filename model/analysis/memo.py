"""Sweeps computed once per model and inputs, whoever asks: a notebook's ``activation_patching(...)``, then
``show(..., "patching", ...)`` on the same prompts, then the app's Causes page all read one result.

A result is kept only while the model is unchanged: the key holds every parameter's version counter, which any
in-place edit of a weight bumps, and nothing is kept or read while a hook is attached to the model (a hook can
change what a run computes). Results are small (a few (L, N) grids), 32 per model at most, dropped with the model.
"""

from __future__ import annotations

import threading
import weakref
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import TypeVar

from torch import nn

KEEP = 32
T = TypeVar("T")
_kept: weakref.WeakKeyDictionary[nn.Module, OrderedDict] = weakref.WeakKeyDictionary()
_guard = threading.Lock()


def _version(model: nn.Module) -> tuple:
    """Every parameter's in-place edit count, and where and in what dtype they live (``.to()`` swaps data)."""
    first = next(model.parameters(), None)
    where = (first.dtype, first.device, first.data_ptr()) if first is not None else ()
    return (sum(p._version for p in model.parameters()), *where)


def _hooked(model: nn.Module) -> bool:
    return any(m._forward_hooks or m._forward_pre_hooks for m in model.modules())


def once(model: nn.Module, key: Hashable, make: Callable[[], T]) -> T:
    """``make()``'s result for ``key`` on this model, computed the first time and then read (see the module)."""
    if _hooked(model):
        return make()
    full = (key, _version(model))
    with _guard:
        kept = _kept.setdefault(model, OrderedDict())
        if full in kept:
            kept.move_to_end(full)
            return kept[full]
    value = make()
    if not _hooked(model) and _version(model) == full[1]:
        with _guard:
            kept[full] = value
            while len(kept) > KEEP:
                kept.popitem(last=False)
    return value


def cached(model: nn.Module, key: Hashable) -> bool:
    """Whether ``key`` is kept for the model as it is now."""
    with _guard:
        return (key, _version(model)) in _kept.get(model, {})
