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


def _tasks() -> int:
    return len(os.listdir("/proc/self/task"))


def _settles(target, timeout: float = 5.0) -> int:
    """The process's thread count once it reaches ``target`` (a pool's threads leave shortly after it is handed
    back), or where it stands after ``timeout``."""
    end = time.monotonic() + timeout
    while _tasks() != target and time.monotonic() < end:
        time.sleep(0.01)
    return _tasks()


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
    extra = THREADS - 1

    def measured() -> tuple[int, int, bool, int]:
        before = _tasks()
        _parallel()
        kept = _tasks()
        released = release_pool()
        return before, kept, released, _settles(before)

    ((before, kept, released, after),) = _in_thread([measured])
    assert kept == before + extra  # the pool stays after the operation
    assert released and after == before  # handed back: its threads are gone


def test_the_background_run_hands_its_pool_back_while_a_page_computes():
    """``behind``'s check, in a thread that ran torch, while a page computes: its pool goes before it waits; the
    page's own pool goes when its computation ends."""
    turns = PagesFirst()
    extra = THREADS - 1
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
    for t in threads:
        t.start()
    try:
        assert ready_bg.wait(10) and ready_page.wait(10)
        both = _tasks()  # two threads, each with its pool
        go.set()
        assert _settles(both - extra) == both - extra  # the background run's pool is gone while it waits
        page_ends.set()
        assert page_done.wait(10)
        assert _settles(both - 2 * extra) == both - 2 * extra  # and the page's, once its computation is over
    finally:
        go.set(), page_ends.set(), end.set()
        for t in threads:
            t.join(30)
