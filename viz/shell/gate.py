"""Admission by bytes: how much forward-pass work the server runs at once.

Captures on a shared model run side by side (``model/capture.py``), so 30 students' first pages no longer queue
behind one lock. Each capture briefly holds its activations and the forward pass's temporaries; without a limit
30 students pasting 512-token texts at once would hold 30 of those at the same moment (≈ 170 MB each on
MiniLM). The gate lets work in while the bytes in flight stay under ``ATTENTION_LAB_INFLIGHT_MB`` (default: a
quarter of the cache budget): short texts (≈ 5 MB in flight at 64 tokens) pass side by side, long ones take
turns. Requests are admitted in arrival order, so a long one is never starved by a stream of short ones, and
one larger than the whole limit runs alone once nothing else is in flight.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections import deque
from collections.abc import Iterator

from viz.shell.budget import budget_from_env


def inflight_from_env(environ=os.environ) -> int:
    """The in-flight limit in bytes: ``ATTENTION_LAB_INFLIGHT_MB`` (positive), else a quarter of the cache budget."""
    text = environ.get("ATTENTION_LAB_INFLIGHT_MB", "")
    try:
        mb = float(text) if text else 0.0
    except ValueError:
        mb = 0.0
    return int(mb * 2**20) if mb > 0 else budget_from_env(environ) // 4


class ByteGate:
    """At most ``limit`` bytes of work in flight; first come, first served. Re-entrant on one thread (work
    inside work already admitted is not counted twice)."""

    def __init__(self, limit: int) -> None:
        self.limit = max(1, int(limit))
        self.in_flight = 0
        self.peak = 0  # the most bytes in flight at once (for tests and benchmarks)
        self.waited = 0  # how many requests had to wait
        self._queue: deque[object] = deque()
        self._cond = threading.Condition()
        self._local = threading.local()

    def _fits(self, nbytes: int) -> bool:
        return self.in_flight == 0 or self.in_flight + nbytes <= self.limit

    @contextlib.contextmanager
    def hold(self, nbytes: int) -> Iterator[None]:
        """Run the block once ``nbytes`` fit beside the work already in flight (and everyone who came first
        has started)."""
        if getattr(self._local, "inside", False):
            yield
            return
        nbytes = max(0, int(nbytes))
        ticket = object()
        with self._cond:
            self._queue.append(ticket)
            if self._queue[0] is not ticket or not self._fits(nbytes):
                self.waited += 1
            while self._queue[0] is not ticket or not self._fits(nbytes):
                self._cond.wait()
            self._queue.popleft()
            self.in_flight += nbytes
            self.peak = max(self.peak, self.in_flight)
            self._cond.notify_all()  # the next in line may fit too
        self._local.inside = True
        try:
            yield
        finally:
            self._local.inside = False
            with self._cond:
                self.in_flight -= nbytes
                self._cond.notify_all()
