"""Admission by bytes (viz/shell/gate.py): how much forward-pass work runs at once."""

import contextlib
import threading
import time

from viz.shell.gate import ByteGate, inflight_from_env


def run_all(
    gate: ByteGate, sizes: list[int], hold_s: float = 0.05, stagger_s: float = 0.0, together: bool = False
) -> list[tuple]:
    """Each size in its own thread (started ``stagger_s`` apart); returns (size, start, end) per request.
    ``together``: each request, once in, also waits (up to 10 s) until every request is in, so that requests the
    gate lets in side by side are all in at once however late a busy machine starts a thread."""
    spans: list[tuple] = []
    lock = threading.Lock()
    meet = threading.Barrier(len(sizes))

    def work(size: int) -> None:
        with gate.hold(size):
            start = time.perf_counter()
            if together:
                with contextlib.suppress(threading.BrokenBarrierError):  # not all got in: the test's asserts say so
                    meet.wait(timeout=10)
            time.sleep(hold_s)
            end = time.perf_counter()
        with lock:
            spans.append((size, start, end))

    threads = []
    for size in sizes:
        threads.append(threading.Thread(target=work, args=(size,)))
        threads[-1].start()
        time.sleep(stagger_s)
    for t in threads:
        t.join(timeout=30)
    assert len(spans) == len(sizes), "a request never got in"
    return spans


def overlapping(spans, at: float) -> list[int]:
    return [size for size, start, end in spans if start <= at < end]


def test_work_in_flight_stays_under_the_limit():
    gate = ByteGate(100)
    spans = run_all(gate, [40] * 6)
    assert gate.peak == 80 and gate.in_flight == 0
    assert max(len(overlapping(spans, s)) for _, s, _ in spans) == 2  # two of 40 fit in 100, three do not
    assert gate.waited >= 4


def test_small_requests_pass_side_by_side():
    gate = ByteGate(1000)
    run_all(gate, [10] * 8, hold_s=0.05, together=True)
    assert gate.peak == 80 and gate.waited == 0  # all eight held the gate at once: none waited for another


def test_a_request_above_the_limit_runs_alone_and_is_not_starved():
    gate = ByteGate(100)
    # small ones keep arriving every 20 ms; the big one comes third and must not wait for all of them
    sizes = [30, 30, 500, *([30] * 10)]
    spans = run_all(gate, sizes, hold_s=0.05, stagger_s=0.02)
    big = next(s for s in spans if s[0] == 500)
    assert overlapping(spans, big[1] + 0.001) == [500]  # alone while it runs
    later = [s for s in spans if s[0] == 30 and s[1] > big[1]]
    assert len(later) >= 8  # those that came after it went after it: first come, first served
    assert gate.peak == 500 and gate.in_flight == 0


def test_nested_holds_on_one_thread_do_not_wait_for_themselves():
    gate = ByteGate(100)
    done = threading.Event()

    def work() -> None:
        with gate.hold(100), gate.hold(100):  # would wait forever if the inner hold counted again
            done.set()

    threading.Thread(target=work).start()
    assert done.wait(timeout=5)
    assert gate.peak == 100


def test_the_limit_comes_from_the_environment():
    assert inflight_from_env({"ATTENTION_LAB_INFLIGHT_MB": "64"}) == 64 * 2**20
    assert inflight_from_env({"ATTENTION_LAB_CACHE_MB": "400"}) == 100 * 2**20  # a quarter of the cache budget
    assert inflight_from_env({"ATTENTION_LAB_INFLIGHT_MB": "lots"}) == inflight_from_env({})
    assert inflight_from_env({"ATTENTION_LAB_INFLIGHT_MB": "-3"}) == inflight_from_env({})
