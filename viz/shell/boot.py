"""The heavy imports, done once per process before any session draws, one session at a time.

Streamlit runs each session's script in its own thread: two students arriving together on a cold ``app.py`` server
imported pandas at the same moment, and one of them got "partially initialized module 'pandas' has no attribute
'DataFrame'" (2 of 30 in issue 48's class). Every session calls :func:`import_once` first; the first one imports
under a lock while the others wait for it, then all find the modules ready. ``serve.py`` calls it before the
server accepts anyone.

It also sets the process's garbage collector for a server that builds plotly figures for many sessions: the
objects of the imports are frozen out of every collection, and the youngest generation is collected after 20,000
new objects instead of 700. A figure's build makes tens of thousands of short-lived dicts and lists, so at 700 the
collector ran about 800 times in a class of 30 (2.2–2.6 s of the server's GIL time, gc.callbacks); at 20,000 it
runs about 30 times (0.4–0.5 s). Reference counting still frees everything that is not in a cycle at once."""

from __future__ import annotations

import gc
import importlib
import threading

#: third-party packages with import-time cycles first, then the app's own entry modules (which import the rest)
HEAVY = ("numpy", "pandas", "pyarrow", "torch", "plotly.graph_objects", "plotly.io", "tokenizers", "safetensors")
APP = ("viz.shell.prepare", "viz.shell.sidebar", "viz.views")
#: the youngest generation's threshold (Python's default 700); the older two keep theirs
YOUNG_THRESHOLD = 20_000
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
        gc.freeze()  # what the imports made lives as long as the process: no collection needs to walk it again
        gc.set_threshold(YOUNG_THRESHOLD, *gc.get_threshold()[1:])
        _done.set()
