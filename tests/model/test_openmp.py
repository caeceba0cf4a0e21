"""OpenMP pools handed back by threads that wait (model/openmp.py), so the thread that works keeps its own spinning."""

from __future__ import annotations

import os
import sys
import threading
import time

import pytest
import torch

from model.analysis.turns import PagesFirst
from model.openmp import release_pool

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux") or not torch.backends.openmp.is_available(),
    reason="threads counted in /proc, torch on OpenMP",
)
THREADS = 2  # each thread's pool: one more thread


@pytest.fixture(autouse=True)
def two_threads():
    """The tests run torch on one thread (conftest.py); a pool needs two. New threads take the number set here."""
    before = torch.get_num_threads()
    torch.set_num_threads(THREADS)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def _tids() -> set[int]:
    """The process's threads (a pool's threads are native: not in ``threading.enumerate``)."""
    return {int(t) for t in os.listdir("/proc/self/task")}


def _left(pool: set[int], timeout: float = 5.0) -> set[int]:
    """Which threads of ``pool`` are still there once they have gone (a pool's threads leave shortly after it is
    handed back), or after ``timeout``. By thread ids, not a count: another test's thread ending while this one
    measures (a background job of an earlier file in the same worker) changed a count."""
    end = time.monotonic() + timeout
    while pool & _tids() and time.monotonic() < end:
        time.sleep(0.01)
    return pool & _tids()


def _parallel() -> None:
    torch.ones(1 << 20).mul_(2).sum()  # large enough for torch to run it on every thread


def _in_thread(steps) -> list:
    """Runs ``steps`` (callables of no argument, returning a value or None) in a new thread, one after the other,
    and returns what they returned."""
    out: list = []

    def body() -> None:
        for step in steps:
            out.append(step())

    thread = threading.Thread(target=body)
    thread.start()
    thread.join()
    return out


def test_a_thread_that_ran_torch_keeps_a_pool_until_it_hands_it_back():
    def measured() -> tuple[set[int], bool, set[int]]:
        before = _tids()
        _parallel()
        pool = _tids() - before  # the threads torch started for this one
        released = release_pool()
        return pool, released, _left(pool)

    ((pool, released, left),) = _in_thread([measured])
    assert len(pool) == THREADS - 1  # the pool stays after the operation
    assert released and not left  # handed back: its threads are gone


def test_the_background_run_hands_its_pool_back_while_a_page_computes():
    """``behind``'s check, in a thread that ran torch, while a page computes: its pool goes before it waits; the
    page's own pool goes when its computation ends."""
    turns = PagesFirst()
    ready_bg, ready_page, go, page_ends, page_done, end = (threading.Event() for _ in range(6))

    def background() -> None:
        _parallel()
        ready_bg.set()
        go.wait(10)
        turns.behind()()  # a page computes: waits for it
        end.wait(10)

    def page() -> None:
        with turns.serving():
            _parallel()
            ready_page.set()
            page_ends.wait(10)
        page_done.set()
        end.wait(10)

    threads = [threading.Thread(target=background), threading.Thread(target=page)]
    try:
        pools = []
        for thread, ready in zip(threads, (ready_bg, ready_page)):  # one after the other: whose pool is whose
            before = _tids()
            thread.start()
            assert ready.wait(10)
            pools.append(_tids() - before - {thread.native_id})
        background_pool, page_pool = pools
        assert len(background_pool) == len(page_pool) == THREADS - 1  # each thread with its pool
        go.set()
        assert not _left(background_pool)  # the background run's pool is gone while it waits
        assert page_pool <= _tids()  # the page's stays while it computes
        page_ends.set()
        assert page_done.wait(10)
        assert not _left(page_pool)  # and goes once its computation is over
    finally:
        go.set(), page_ends.set(), end.set()
        for t in threads:
            if t.is_alive():
                t.join(30)
