"""The background run's thumbnails (model/long.py, LongObservation.thumbnails): after the pass and before the
summary, pages first, each layer computed once whether the background run or a page asks first."""

from __future__ import annotations

import dataclasses
import threading
import time

import numpy as np
import pytest

import model.long_pooled
from model.long import Cancelled
from tests.model.test_long import TOL, VARIANTS, long_and_patterns, tiny

SIZE = 8
DECODER = dict(causal=True, n_kv_heads=2, positional="rope", norm_kind="rmsnorm", n_layers=3)


@pytest.fixture
def calls(monkeypatch):
    """Every call of the fused kernel's block sums, by layer (0.1 s each, so that two askers overlap)."""
    made: list[int] = []
    real = model.long_pooled.block_sums

    def counted(q, k, rule, bounds):
        made.append(1)
        time.sleep(0.1)
        return real(q, k, rule, bounds)

    monkeypatch.setattr(model.long_pooled, "block_sums", counted)
    return made


def test_the_background_thumbnails_are_the_overviews_and_a_page_computes_none_again(calls):
    long, _, _ = long_and_patterns(tiny(**DECODER), 300)
    fresh, _, _ = long_and_patterns(tiny(**DECODER), 300)
    long.summary(1)  # a page's summary of layer 1: its thumbnails come from it
    long.thumbnails(SIZE)
    assert len(calls) == 2 and long.summarised == 1  # layers 0 and 2 through the kernel, no summary streamed
    shown, bounds = long.pooled(SIZE)  # the model overview, opened later
    assert len(calls) == 2  # nothing computed again
    want, want_bounds = fresh.pooled(SIZE)
    assert np.array_equal(bounds, want_bounds) and np.abs(shown - want).max() <= 1e-6


def test_a_soft_capped_layer_is_left_to_its_summary(calls):
    long, _, _ = long_and_patterns(tiny(**DECODER), 300)
    long.rules = (dataclasses.replace(long.rules[0], softcap=30.0), *long.rules[1:])  # the kernel cannot cap
    long.thumbnails(SIZE)
    assert len(calls) == 2 and long.summarised == 0


@pytest.mark.slow  # waits on the background run: 1.0 s
def test_the_background_thumbnails_wait_while_a_page_computes_and_stop_when_cancelled(calls):
    long, _, _ = long_and_patterns(tiny(**DECODER), 300)
    done = []
    with long.turns.serving():
        run = threading.Thread(target=lambda: done.append(long.thumbnails(SIZE)))
        run.start()
        run.join(0.6)
        assert run.is_alive() and not calls  # waiting at its first check
    run.join(30)
    assert done and len(calls) == 3
    again, _, _ = long_and_patterns(tiny(**DECODER), 300)
    with pytest.raises(Cancelled):
        again.thumbnails(SIZE, cancel=lambda: True)


@pytest.mark.slow  # a page and the background run take turns: 1.5 s, mostly waiting
def test_a_page_and_the_background_run_never_compute_a_layer_twice(calls):
    long, _, _ = long_and_patterns(tiny(**{**DECODER, "n_layers": 6}), 300)
    progress: list[int] = []
    run = threading.Thread(target=long.thumbnails, args=(SIZE, lambda done, total: progress.append(done)))
    run.start()
    shown, _ = long.pooled(SIZE)  # the overview opened meanwhile: both go through the layers at once
    run.join(30)
    assert len(calls) == 6 and progress == [1, 2, 3, 4, 5, 6]
    fresh, _, _ = long_and_patterns(tiny(**{**DECODER, "n_layers": 6}), 300)
    assert np.abs(shown - fresh.pooled(SIZE)[0]).max() <= 1e-6


@pytest.mark.parametrize("name", VARIANTS)
def test_a_layers_mean_over_heads_is_its_heads_grids_mean_from_one_kernel_call(name, calls, monkeypatch):
    """The attention page's "every head" and "mean over the heads" of a layer not yet summarised: one call of the
    kernel at the grid's own cells (140 a side here: far more key blocks than the heads are wide, so the keys go a
    group of blocks at a time, rescaled by their logsumexp), both views read from it, and they equal what the
    heads' own summaries give — windows included, where a row block sees only some of the groups."""
    from model.analysis import thumbs

    monkeypatch.setattr(thumbs, "WINDOW_ROWS", 96)
    long, _, _ = long_and_patterns(tiny(**VARIANTS[name]), 700)
    fresh, _, _ = long_and_patterns(tiny(**VARIANTS[name]), 700)
    assert long.cells == 140 and long.cells > long.q.shape[-1] * 16
    means = [np.mean([fresh.grid(layer, head) for head in range(fresh.n_heads)], axis=0) for layer in range(2)]
    pooled = [fresh.pooled(SIZE, [layer])[0] for layer in range(2)]
    calls.clear()
    for layer in range(long.n_layers):
        every, _ = long.pooled(SIZE, [layer], fine=True)
        mean, want = long.head_mean(layer), means[layer]
        assert np.array_equal(np.isfinite(mean), np.isfinite(want))
        assert np.abs(mean[np.isfinite(mean)] - want[np.isfinite(want)]).max() <= TOL
        assert np.abs(every - pooled[layer]).max() <= TOL
    assert len(calls) == long.n_layers == 2 and long.summarised == 0 and not long._heads
