"""OpenMP's thread pools in a process where several threads run torch (a server: pages, background runs).

torch's CPU operations run on OpenMP. libgomp (torch's OpenMP on Linux) gives every thread that runs a parallel
operation a pool of its own (cores − 1 more threads), kept until that thread exits. While the threads of all pools
outnumber the cores, libgomp's threads stop spinning between operations and sleep instead (a spin count of 100
rather than 300,000), so every operation pays for waking them: on two cores, fine-grained work such as the summary
of a SmolLM2 layer at 8,192 tokens took 1.85–2.02 s once a second thread had run torch, even an idle one, and
1.32 s where one thread alone had (bench/RESULTS.md, "8,192 tokens: the memory held").

:func:`release_pool` hands the calling thread's pool back (``omp_pause_resource``, OpenMP 5.0) and the next
operation of that thread makes a new one (tens of microseconds). A thread that goes on waiting or idle after its
torch work calls it, so that the thread working meanwhile keeps its pool spinning. Anywhere else (no OpenMP that
torch loaded, inside a parallel region) it does nothing.
"""

from __future__ import annotations

import ctypes
import os

#: OpenMP runtimes torch may have loaded, by the name it loads them under (GNU on Linux; LLVM's elsewhere)
RUNTIMES = ("libgomp.so.1", "libomp.so", "libomp.dylib", "libiomp5.so")
OMP_PAUSE_SOFT = 1
_runtime: dict[str, ctypes.CDLL | None] = {}


def _loaded() -> ctypes.CDLL | None:
    """The OpenMP runtime this process has loaded (never loads one), or None. Looked up once torch is imported."""
    if "lib" in _runtime:
        return _runtime["lib"]
    import torch  # noqa: F401  (its OpenMP is loaded with it)

    found = None
    for name in RUNTIMES:
        try:
            lib = ctypes.CDLL(name, mode=os.RTLD_NOLOAD | os.RTLD_LOCAL) if hasattr(os, "RTLD_NOLOAD") else None
        except OSError:
            continue
        if lib is not None and hasattr(lib, "omp_pause_resource") and hasattr(lib, "omp_get_initial_device"):
            found = lib
            break
    _runtime["lib"] = found
    return found


def release_pool() -> bool:
    """Hand the calling thread's OpenMP pool back; returns whether the runtime did (False where there is none to
    call, or inside a parallel region)."""
    lib = _loaded()
    if lib is None:
        return False
    return lib.omp_pause_resource(OMP_PAUSE_SOFT, lib.omp_get_initial_device()) == 0
