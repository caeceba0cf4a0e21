"""Pages first: on a long text read whole, the work a page waits for runs before the background run's.

On two cores, a page computing beside the background run (the pass, then the summary of every head) gets half of
them; the background run checks :meth:`PagesFirst.behind` between its steps (a layer of the pass, a block of rows
of the summary) and waits there while any page computes (SmolLM2 at 8,192 tokens in the app: the last layer's map
in 2.3 s after the pass rather than 3.1 s beside the summary of layer 0, each layer's thumbnails 0.44 s not 0.75).

    turns = PagesFirst()
    with turns.serving():                 # a page's computation
        ...
    check = turns.behind(job.stop.is_set)  # the background run's cancel check: waits while a page computes
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from model.openmp import release_pool


class PagesFirst:
    """How many pages compute now; the background run waits for none to."""

    def __init__(self) -> None:
        self._turn = threading.Condition()
        self._front = 0

    @property
    def serving_now(self) -> int:
        """Pages computing now."""
        return self._front

    @contextmanager
    def serving(self) -> Iterator[None]:
        """A page's computation: the background run pauses at its next check until it is over. Inside it, never
        wait for the background run (a layer's summary it is streaming): it would wait for this to end."""
        with self._turn:
            self._front += 1
        try:
            yield
        finally:
            release_pool()  # the page's thread goes on drawing: the background run's OpenMP threads may spin
            with self._turn:
                self._front -= 1
                self._turn.notify_all()

    def behind(self, cancel: Callable[[], bool] | None = None) -> Callable[[], bool]:
        """A background run's check between its steps: it waits while any page computes, then says whether
        ``cancel()`` asks it to stop (asked every half second meanwhile)."""

        def check() -> bool:
            with self._turn:
                if self._front:
                    release_pool()  # while this run waits, the page's OpenMP threads may spin (model/openmp.py)
                while self._front and not (cancel is not None and cancel()):
                    self._turn.wait(0.5)
            return cancel is not None and cancel()

        return check
