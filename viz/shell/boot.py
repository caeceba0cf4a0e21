"""The heavy imports, done once per process before any session draws, one session at a time.

Streamlit runs each session's script in its own thread: two students arriving together on a cold ``app.py`` server
imported pandas at the same moment, and one of them got "partially initialized module 'pandas' has no attribute
'DataFrame'" (2 of 30 in issue 48's class). Every session calls :func:`import_once` first; the first one imports
under a lock while the others wait for it, then all find the modules ready. ``serve.py`` calls it before the
server accepts anyone."""

from __future__ import annotations

import importlib
import threading

#: third-party packages with import-time cycles first, then the app's own entry modules (which import the rest)
HEAVY = ("numpy", "pandas", "pyarrow", "torch", "plotly.graph_objects", "plotly.io", "tokenizers", "safetensors")
APP = ("viz.shell.prepare", "viz.shell.sidebar", "viz.views")
_lock = threading.Lock()
_done = threading.Event()


def import_once() -> None:
    """Import :data:`HEAVY` and :data:`APP` (once; concurrent callers wait for the first)."""
    if _done.is_set():
        return
    with _lock:
        if _done.is_set():
            return
        for name in (*HEAVY, *APP):
            try:
                importlib.import_module(name)
            except ImportError:  # an optional package (pyarrow) that is not installed: nothing to race on
                if name in APP:
                    raise
        _done.set()
