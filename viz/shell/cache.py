"""The shared cache's front door: ``@shared`` caches a function's results in one byte-bounded store for every
session (``viz/shell/budget.py``; ``ATTENTION_LAB_CACHE_MB``, default 2048), showing a spinner while it computes.
The cached functions themselves all live in ``viz/shell/services.py``.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable

import numpy as np
import streamlit as st
from streamlit.runtime.scriptrunner import get_script_run_ctx

from model.memory import release_freed_memory
from viz.shell.budget import ByteBudgetCache, budget_from_env

# empty until the first page asks for something; evicting hands freed memory back to the OS now and then
CACHE = ByteBudgetCache(budget_from_env(), release=release_freed_memory)


def frozen(value):
    """A hashable stand-in for a cache-key argument (lists and dicts from widgets, arrays)."""
    if isinstance(value, (list, tuple)):
        return tuple(frozen(v) for v in value)
    if isinstance(value, dict):
        return tuple(sorted((k, frozen(v)) for k, v in value.items()))
    if isinstance(value, set):
        return frozenset(value)
    if isinstance(value, np.ndarray):
        return value.shape, str(value.dtype), value.tobytes()
    return value


def shared(spinner: str | Callable[..., str] | None = None):
    """Cache a function's results in the shared byte-bounded cache, keyed by its name and its arguments whose
    names do not start with ``_``; shows ``spinner`` while a result is computed (a callable gets the call's
    arguments by name and returns the text, so the spinner says what this call runs)."""

    def wrap(func):
        names = list(inspect.signature(func).parameters)

        def key_of(args, kwargs):
            bound = {**dict(zip(names, args, strict=False)), **kwargs}
            return bound, (func.__qualname__, tuple((k, frozen(v)) for k, v in bound.items() if not k.startswith("_")))

        @functools.wraps(func)
        def call(*args, **kwargs):
            bound, key = key_of(args, kwargs)

            def make():
                if spinner is None or get_script_run_ctx() is None:  # a notebook, a test, a background thread
                    return func(*args, **kwargs)
                with st.spinner(spinner(**bound) if callable(spinner) else spinner):
                    return func(*args, **kwargs)

            return CACHE.get(key, make)

        def cached(*args, **kwargs) -> bool:
            """Whether this call's result is in the cache already (nothing is computed)."""
            return key_of(args, kwargs)[1] in CACHE

        call.cached = cached
        call.clear = CACHE.clear
        return call

    return wrap
