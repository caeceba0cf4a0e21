"""A page waiting on a background job wakes at the job's report, not at its fragment's next tick (viz/shell/jobs.py)."""

from __future__ import annotations

import threading
import time

from viz.shell import jobs


def _job(name: str, work) -> jobs.Job:
    return jobs.run(("test-wait", name, time.monotonic()), "test-wait", 3, work, name=name)


def test_a_waiting_page_wakes_when_the_report_it_needs_arrives():
    go = threading.Event()

    def work(job: jobs.Job) -> None:
        go.wait(10)
        job.report(1, 3)  # the layer the page shows
        job.stop.wait(5)  # the rest of the pass (a real pass checks stop: so does this one, or exit waits on it)
        job.report(3, 3)

    job = _job("wakes", work)
    try:
        assert not job.wait_for(lambda: job.done >= 1, 0.1)  # nothing yet: the wait ends at its timeout
        threading.Timer(0.2, go.set).start()
        start = time.monotonic()
        assert job.wait_for(lambda: job.done >= 1, 10)
        assert time.monotonic() - start < 2  # at the report (0.2 s), not at the end of the run or of the timeout
    finally:
        job.stop.set()


def test_a_waiting_page_wakes_when_the_job_ends_without_what_it_needs():
    def work(job: jobs.Job) -> None:
        time.sleep(0.2)
        raise RuntimeError("the pass failed")

    job = _job("ends", work)
    start = time.monotonic()
    assert not job.wait_for(lambda: job.done >= 1, 10)
    assert time.monotonic() - start < 2 and job.finished and "the pass failed" in job.error
