"""Allocator tuning for repeated large forward passes on the CPU (glibc only; a no-op elsewhere).

glibc serves blocks above its mmap threshold with fresh mmap() calls and returns them to the OS when freed,
so every forward pass that keeps its attention tensors alive (capture does) page-faults tens of MB of new
memory. Raising the thresholds keeps freed blocks in the heap for the next pass to reuse.
"""

from __future__ import annotations

import ctypes
import sys

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
