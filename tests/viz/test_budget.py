"""The shared cache is bounded in bytes: sizes, least-recently-used eviction, one computation per key."""

import contextlib
import sys
import threading
import time
from dataclasses import dataclass

import numpy as np
import pytest
import torch

from viz.shell.budget import ByteBudgetCache, budget_from_env, reserve_from_env, size_of


def test_size_of_counts_each_buffer_once():
    a = np.zeros((100, 100), dtype=np.float32)  # 40,000 bytes
    assert 40_000 <= size_of(a) < 41_000
    assert size_of([a, a, a[:10]]) < 41_000  # the same buffer three times, one of them a view
    t = torch.zeros(1000)
    assert 4000 <= size_of({"x": t, "y": t[:10]}) < 5000

    @dataclass(frozen=True)
    class Held:
        patterns: np.ndarray
        other: tuple

    held = Held(np.ones(5000), (np.ones(1000), "text"))
    assert 48_000 <= size_of(held) < 50_000


def test_long_lists_are_measured_on_a_sample_and_arrays_in_them_still_once():
    ids = [[i, j, 0.25 * j] for i in range(64) for j in range(64)]  # a heatmap's click targets: 4,096 small lists
    exact = sys.getsizeof(ids) + sum(sys.getsizeof(x) + sum(sys.getsizeof(v) for v in x) for x in ids)
    assert 0.8 * exact < size_of(ids) < 1.25 * exact
    labels = [f"token {i}" for i in range(500)]
    assert 0.8 * sum(map(sys.getsizeof, labels)) < size_of(labels) < 1.25 * (sys.getsizeof(labels) + 500 * 60)
    a = np.zeros(10_000)  # 80,000 bytes, listed 100 times: still counted once
    assert 80_000 <= size_of([a] * 100) < 100_000
    assert 80_000 <= size_of([[a]] * 100) < 100_000


def test_evicts_the_least_recently_used_once_the_bytes_pass_the_budget():
    cache = ByteBudgetCache(1000, sizer=len)
    cache.get("a", lambda: b"a" * 400)
    cache.get("b", lambda: b"b" * 400)
    cache.get("a", lambda: pytest.fail("a is cached"))  # a is now the most recently used
    cache.get("c", lambda: b"c" * 400)
    assert "a" in cache and "c" in cache and "b" not in cache and cache.nbytes == 800
    assert cache.evictions == 1
    cache.get("d", lambda: b"d" * 900)  # needs everything else gone
    assert list(cache._entries) == ["d"] and cache.nbytes == 900


def test_the_running_total_is_the_sum_of_what_is_kept():
    """The cache keeps its byte total as entries come and go (no sum over every entry per put): after any mix of
    puts, replacements, discards, evictions and a clear it equals the sum of the kept entries' sizes."""
    rng = np.random.default_rng(0)
    cache = ByteBudgetCache(1000, sizer=lambda v: v)
    for _ in range(2000):
        key, action = int(rng.integers(0, 40)), rng.random()
        if action < 0.7:
            cache.put(key, int(rng.integers(1, 300)))  # replaces, evicts, or is too large (> 1000: never)
        elif action < 0.95:
            cache.discard(key)
        else:
            cache.get(key, lambda: 120)
        assert cache.nbytes == sum(size for _, size in cache._entries.values()) <= 1000
    cache.clear()
    assert cache.nbytes == 0 and len(cache) == 0


def test_a_value_larger_than_the_budget_is_returned_but_not_kept():
    cache = ByteBudgetCache(100, sizer=len)
    cache.get("small", lambda: b"x" * 50)
    assert cache.get("huge", lambda: b"y" * 500) == b"y" * 500
    assert "huge" not in cache and "small" in cache


def test_many_threads_asking_at_once_compute_once_and_errors_are_not_kept():
    cache = ByteBudgetCache(10_000, sizer=len)
    calls = []

    def slow():
        calls.append(1)
        time.sleep(0.2)
        return b"result"

    threads = [threading.Thread(target=cache.get, args=("k", slow)) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(calls) == 1

    def broken():
        calls.append(2)
        raise RuntimeError("boom")

    for _ in range(2):
        with pytest.raises(RuntimeError):
            cache.get("bad", broken)
    assert calls.count(2) == 2 and "bad" not in cache


def test_budget_comes_from_the_environment():
    assert budget_from_env({}) == 2048 * 2**20
    assert budget_from_env({"ATTENTION_LAB_CACHE_MB": "256"}) == 256 * 2**20
    assert budget_from_env({"ATTENTION_LAB_CACHE_MB": "lots"}) == 2048 * 2**20
    assert budget_from_env({"ATTENTION_LAB_CACHE_MB": "-5"}) == 2048 * 2**20
    assert reserve_from_env({}) == 512 * 2**20  # a quarter of the cache budget
    assert reserve_from_env({"ATTENTION_LAB_CACHE_MB": "1024"}) == 256 * 2**20
    assert reserve_from_env({"ATTENTION_LAB_WARM_MB": "0"}) == 0  # off
    assert reserve_from_env({"ATTENTION_LAB_WARM_MB": "300"}) == 300 * 2**20


def test_freed_memory_is_handed_back_after_a_quarter_of_the_budget_was_evicted():
    calls = []
    cache = ByteBudgetCache(1000, sizer=len, release=lambda: calls.append(cache.nbytes))
    for i in range(4):
        cache.get(i, lambda: b"x" * 300)  # the fourth evicts the first: 300 bytes >= a quarter
    assert calls == [900]
    cache.get(4, lambda: b"x" * 100)  # fits without evicting: no call
    cache.get(5, lambda: b"x" * 200)  # evicts 300 more
    assert len(calls) == 2


def test_the_mixing_spinner_names_only_what_runs(monkeypatch):
    from viz.shell import cache, services

    shown = []
    monkeypatch.setattr(cache.st, "spinner", lambda text: (shown.append(text), contextlib.nullcontext())[1])
    monkeypatch.setattr(cache, "get_script_run_ctx", lambda: object())  # as inside a page run

    @cache.shared(services._mixing_spinner)
    def measure(spec, value_zeroing: bool) -> int:
        return 1

    measure("a", value_zeroing=False)
    measure("a", True)
    assert shown == [
        "Measuring context mixing (norm-based, ALTI)…",
        "Measuring context mixing (norm-based, ALTI, value zeroing)…",
    ]
    cache.CACHE.clear()
    monkeypatch.setattr(cache, "get_script_run_ctx", lambda: None)  # a notebook, a test, a background thread
    measure("b", value_zeroing=False)
    assert len(shown) == 2  # computed without a spinner: there is no page to show it on
    cache.CACHE.clear()
