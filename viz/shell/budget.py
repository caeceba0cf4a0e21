"""One cache for everything the server shares between sessions, bounded in bytes, not in entries.

A classroom server holds models, analyses (up to hundreds of MB each at 512 tokens) and built figures for every
student's text. Counting entries does not bound memory; this cache sizes each value (numpy arrays, torch
tensors and modules, plotly figures, dataclasses and containers, each buffer counted once) and evicts the least
recently used entries once the total passes the budget: ``ATTENTION_LAB_CACHE_MB`` (default 2048: SmolLM2 with
a text read whole at 8,192 tokens beside its first 512 tokens' patterns, 1.6 GB).

Values are computed once per key even when many sessions ask at the same moment (the others wait for it),
and errors are not cached. No streamlit here: ``viz/shell/services.py`` wraps its functions with it.
"""

from __future__ import annotations

import dataclasses
import os
import sys
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Any

import numpy as np

DEFAULT_MB = 2048


def budget_from_env(environ=os.environ) -> int:
    """The cache budget in bytes: ``ATTENTION_LAB_CACHE_MB`` (a positive number), else the default."""
    text = environ.get("ATTENTION_LAB_CACHE_MB", "")
    try:
        mb = float(text) if text else DEFAULT_MB
    except ValueError:
        mb = DEFAULT_MB
    return int((mb if mb > 0 else DEFAULT_MB) * 2**20)


def reserve_from_env(environ=os.environ) -> int:
    """Bytes of memory kept touched for the next observation's patterns (model/memory.py's WarmReserve):
    ``ATTENTION_LAB_WARM_MB`` (0 turns it off), else a quarter of the cache budget (512 MB by default; SmolLM2's
    patterns at 512 tokens take 270 MB)."""
    text = environ.get("ATTENTION_LAB_WARM_MB", "")
    try:
        mb = float(text) if text else -1.0
    except ValueError:
        mb = -1.0
    return int(mb * 2**20) if mb >= 0 else budget_from_env(environ) // 4


SAMPLE_OVER = 64  # lists longer than this are measured on a sample (see _long_sequence)


def size_of(obj: Any, seen: set[int] | None = None, depth: int = 0) -> int:
    """Bytes held by ``obj``: array and tensor buffers (shared ones counted once) plus a small amount per
    Python object. Walks containers, dataclasses, objects' ``__dict__`` and torch modules."""
    seen = set() if seen is None else seen
    if id(obj) in seen or depth > 12 or obj is None:
        return 0
    seen.add(id(obj))
    if isinstance(obj, np.ndarray):
        base = obj
        while isinstance(base.base, np.ndarray):
            base = base.base
        if base is not obj:
            return size_of(base, seen, depth + 1)
        return int(obj.nbytes) + 112
    torch = sys.modules.get("torch")
    if torch is not None:
        if isinstance(obj, torch.Tensor):
            storage = obj.untyped_storage()
            key = ("storage", storage.data_ptr(), storage.nbytes())
            if hash(key) in seen:
                return 64
            seen.add(hash(key))
            return int(storage.nbytes()) + 64
        if isinstance(obj, torch.nn.Module):
            return 256 + sum(size_of(t, seen, depth + 1) for t in obj.state_dict(keep_vars=True).values())
    pandas = sys.modules.get("pandas")
    if pandas is not None and isinstance(obj, pandas.DataFrame):  # a corpus profile's tables
        return int(obj.memory_usage(deep=True).sum()) + 256
    if isinstance(obj, (str, bytes, bytearray)):
        return sys.getsizeof(obj)
    if isinstance(obj, (int, float, bool, complex)):
        return 32
    if isinstance(obj, dict):
        return 64 + sum(size_of(k, seen, depth + 1) + size_of(v, seen, depth + 1) for k, v in obj.items())
    if isinstance(obj, (list, tuple)) and len(obj) > SAMPLE_OVER:
        return _long_sequence(obj, seen, depth)
    if isinstance(obj, (list, tuple, set, frozenset)):
        return 56 + sum(size_of(v, seen, depth + 1) for v in obj)
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return 64 + sum(size_of(getattr(obj, f.name, None), seen, depth + 1) for f in dataclasses.fields(obj))
    plotly = sys.modules.get("plotly.basedatatypes")
    if plotly is not None and isinstance(obj, plotly.BaseFigure):  # its data and layout as the plain containers
        # it keeps (to_plotly_json would copy them and base64-encode every array first)
        held = {"data": obj._data, "layout": obj._layout, "frames": [f._props for f in obj._frame_objs]}
        return size_of(held, seen, depth + 1)
    plotly_json = getattr(obj, "to_plotly_json", None)
    if callable(plotly_json):  # another plotly object: its properties as plain containers
        return size_of(plotly_json(), seen, depth + 1)
    attrs = getattr(obj, "__dict__", None)
    if isinstance(attrs, dict):
        return 64 + size_of(attrs, seen, depth + 1)
    return sys.getsizeof(obj)


def _long_sequence(obj: list | tuple, seen: set[int], depth: int) -> int:
    """A long list of plain values (a figure's tick labels, click targets' ids): measured on an even sample of
    its items, since walking 5,000 small lists on every cache write cost more than the figure they belong to.
    A list holding arrays or tensors is walked in full (they may be shared and must be counted once)."""
    picks = range(0, len(obj), -(-len(obj) // SAMPLE_OVER))
    plain = (str, bytes, int, float, bool, list, tuple)
    if not all(isinstance(obj[i], plain) and not _holds_buffers(obj[i]) for i in picks):
        return 56 + sum(size_of(v, seen, depth + 1) for v in obj)
    sample = sum(size_of(obj[i], set(), depth + 1) for i in picks)
    return 56 + 8 * len(obj) + int(sample * len(obj) / len(picks))


def _holds_buffers(value: Any) -> bool:
    return isinstance(value, (list, tuple)) and any(not isinstance(v, (str, int, float, bool)) for v in value[:8])


class ByteBudgetCache:
    """Least-recently-used cache bounded by the bytes of its values (see the module docstring)."""

    def __init__(
        self, budget: int, sizer: Callable[[Any], int] = size_of, release: Callable[[], object] | None = None
    ) -> None:
        """``release``: called (outside the lock) each time entries worth a quarter of the budget have been
        evicted since the last call — the server hands freed memory back to the OS there."""
        self.budget = budget
        self.sizer = sizer
        self.release = release
        self._evicted_bytes = 0
        self._entries: OrderedDict[Hashable, tuple[Any, int]] = OrderedDict()
        self._total = 0  # the sizes of the entries, kept as they come and go (a sum over them took 5 % of a class's
        # openings: thousands of entries summed on every put)
        self._lock = threading.Lock()
        self._making: dict[Hashable, threading.Lock] = {}
        self.evictions = 0

    @property
    def nbytes(self) -> int:
        with self._lock:
            return self._total

    def _drop(self, key: Hashable) -> Any:
        """Remove ``key``'s entry (the lock held); returns its value or None."""
        found = self._entries.pop(key, None)
        if found is None:
            return None
        self._total -= found[1]
        return found[0]

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, key: Hashable) -> bool:
        return key in self._entries

    def peek(self, key: Hashable) -> Any:
        """The value kept for ``key`` (counted as a use), or None; never makes one."""
        with self._lock:
            if key not in self._entries:
                return None
            self._entries.move_to_end(key)
            return self._entries[key][0]

    def discard(self, key: Hashable) -> None:
        """Forget ``key``'s value (another entry now serves it)."""
        with self._lock:
            self._drop(key)

    def get(self, key: Hashable, make: Callable[[], Any]) -> Any:
        """The value for ``key``, made by ``make()`` if absent (once, however many threads ask)."""
        with self._lock:
            if key in self._entries:
                self._entries.move_to_end(key)
                return self._entries[key][0]
            gate = self._making.setdefault(key, threading.Lock())
        with gate:
            with self._lock:  # another thread may have made it while this one waited at the gate
                if key in self._entries:
                    self._entries.move_to_end(key)
                    return self._entries[key][0]
            try:
                value = make()
            finally:
                with self._lock:
                    self._making.pop(key, None)
            self.put(key, value)
            return value

    def put(self, key: Hashable, value: Any) -> None:
        """Keep ``value``, then evict the least recently used entries until the total fits the budget. A value
        larger than the whole budget is still returned to its caller, just not kept."""
        size = self.sizer(value)
        evicted = []  # dropped outside the lock: freeing big arrays takes time
        with self._lock:
            self._drop(key)
            if size > self.budget:
                self.evictions += 1
                return
            self._entries[key] = (value, size)
            self._total += size
            while self._total > self.budget and len(self._entries) > 1:
                _, (old, freed) = self._entries.popitem(last=False)
                evicted.append(old)
                self._total -= freed
                self.evictions += 1
                self._evicted_bytes += freed
            due = self.release is not None and self._evicted_bytes >= self.budget // 4
            if due:
                self._evicted_bytes = 0
        del evicted
        if due:
            self.release()

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self._total = 0
