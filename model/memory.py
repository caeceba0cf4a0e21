"""Allocator tuning for repeated large forward passes on the CPU (glibc only; a no-op elsewhere).

glibc serves blocks above its mmap threshold with fresh mmap() calls and returns them to the OS when freed,
so every forward pass that keeps its attention tensors alive (capture does) page-faults tens of MB of new
memory. Raising the thresholds keeps freed blocks in the heap for the next pass to reuse. Above the largest threshold
glibc allows (32 MB), :class:`WarmReserve` keeps the next large array's memory touched ahead of need.
"""

from __future__ import annotations

import ctypes
import math
import os
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress

import torch

M_TRIM_THRESHOLD = -1
M_MMAP_THRESHOLD = -3
_done = {"ok": None}


def keep_freed_memory(mmap_threshold: int = 32 * 2**20, trim_threshold: int = 1024 * 2**20) -> bool:
    """Serve blocks up to ``mmap_threshold`` from the heap and keep up to ``trim_threshold`` of freed memory.

    Idempotent; returns whether the allocator accepted the settings.
    """
    if _done["ok"] is not None:
        return _done["ok"]
    ok = False
    if sys.platform.startswith("linux"):
        try:
            libc = ctypes.CDLL("libc.so.6")
            ok = bool(libc.mallopt(M_MMAP_THRESHOLD, mmap_threshold)) and bool(
                libc.mallopt(M_TRIM_THRESHOLD, trim_threshold)
            )
        except (OSError, AttributeError):
            ok = False
    _done["ok"] = ok
    return ok


def release_freed_memory() -> bool:
    """Hand the heap's free memory back to the OS now (glibc ``malloc_trim``); returns whether it ran.

    keep_freed_memory() lets the heap keep up to its trim threshold of freed memory so the next forward pass
    does not page-fault; a server that evicts large cached analyses calls this now and then, so what it keeps
    stays close to what it holds."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):
        return False
    return True


class WarmReserve:
    """Memory touched ahead of need, for the next large array a forward pass fills (an observation's patterns:
    SmolLM2's at 512 tokens are 270 MB).

    glibc maps every block above 32 MB fresh from the OS, and a virtual machine may charge dearly for memory the
    process has not touched yet: on our 2-core VM a new text's 512-token observation page-faulted its 270 MB of
    patterns in 0.1–1.3 s of kernel time (1.3–2.5 s in all, 1.0 s alone). While a reserve is :meth:`enable`-d,
    :meth:`empty` hands out its block when a request is within a quarter of its size, and a background thread at
    the lowest priority touches the next block (the size last asked for) a second after the last request, while
    nothing holds the reserve off (:meth:`held_off`: a long text's read, whose peak it would raise). The server
    holds it beside its cache: ``ATTENTION_LAB_WARM_MB`` (viz/shell/budget.py).
    Disabled (the default), :meth:`empty` is ``torch.empty``.
    """

    def __init__(self, limit: int = 0, least: int = 32 * 2**20, delay: float = 1.0) -> None:
        self.limit, self.least, self.delay = limit, least, delay  # bytes at most / at least, seconds
        self._lock = threading.Condition()
        self._block: torch.Tensor | None = None  # (bytes,) uint8, every page touched
        self._want = 0
        self._asked = 0.0  # monotonic time of the last request
        self._off = 0
        self._thread: threading.Thread | None = None

    @property
    def held(self) -> int:
        """Bytes the reserve holds now."""
        block = self._block
        return 0 if block is None else block.numel()

    def enable(self, limit: int) -> None:
        """Keep a block of up to ``limit`` bytes touched (0: none). The thread starts with the first request."""
        with self._lock:
            self.limit = limit
            if limit < self.held:
                self._block = None

    def empty(self, shape: tuple[int, ...], dtype: torch.dtype) -> torch.Tensor:
        """``torch.empty(shape, dtype=dtype)`` on the CPU, from the reserve's block when it fits."""
        n = math.prod(shape) * torch.empty((), dtype=dtype).element_size()
        if not self.limit or not self.least <= n <= self.limit:
            return torch.empty(shape, dtype=dtype)
        with self._lock:
            block = self._block if self._fits(n) else None
            if block is not None:
                self._block = None
            self._want, self._asked = n, time.monotonic()
            self._start()
            self._lock.notify_all()
        if block is None:
            return torch.empty(shape, dtype=dtype)
        return block[:n].view(dtype).view(shape)  # (bytes,) -> shape; the block's tail (< n / 4) goes with it

    @contextmanager
    def held_off(self) -> Iterator[None]:
        """No block kept while inside (its memory goes back now), and none touched after it until the next
        request: what such a run leaves in the cache (a long text's q and k) and the reserve would otherwise sit
        side by side (SmolLM2 at 8,192 tokens: 2.55 GB at the peak instead of 2.32)."""
        with self._lock:
            self._off += 1
            self._block = None
        try:
            yield
        finally:
            with self._lock:
                self._off -= 1
                self._want = 0

    def _start(self) -> None:
        if self._thread is None or not self._thread.is_alive():
            self._thread = threading.Thread(target=self._refill, name="warm-reserve", daemon=True)
            self._thread.start()

    def _fits(self, n: int) -> bool:
        """Whether the block held serves a request of ``n`` bytes (at least that, at most a quarter more)."""
        return self._block is not None and n <= self._block.numel() <= n * 5 // 4

    def _due(self) -> float | None:
        """Seconds until a block should be touched (0: now), or None while there is nothing to do. A block held
        for another size (a longer text's, another model's) is replaced by one for the size asked for last."""
        if self._off or not self._want or self._want > self.limit or self._fits(self._want):
            return None
        return max(0.0, self._asked + self.delay - time.monotonic())

    def _refill(self) -> None:
        with suppress(AttributeError, OSError):
            os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), 19)  # this thread only, on Linux
        while True:
            with self._lock:
                while (wait := self._due()) != 0.0:
                    self._lock.wait(wait)
                want = self._want
                self._block = None  # one block at a time: a block of another size goes before the next is made
            block = torch.empty(want, dtype=torch.uint8)
            block.numpy()[::PAGE] = 0  # numpy, one thread: no OpenMP pool for this thread (model/openmp.py)
            with self._lock:
                if not self._off and want == self._want:
                    self._block = block
                del block


PAGE = 4096
#: the process's reserve (model/capture.py takes stacked layers from it); the app enables it
RESERVE = WarmReserve()
