"""The test run's shared sweeps (tests/sweeps.py): a sweep on a model with the same weights and inputs is read back,
equal to what computing it gives; other weights or inputs compute their own."""

from __future__ import annotations

import copy

import numpy as np
import pytest
import torch

from model.analysis import circuits, paths
from model.analysis import patching as patching_module
from model.analysis.circuits import circuit
from model.analysis.needle import NeedleGrid, NeedleRun
from model.analysis.patching import Metric, activation_patching
from model.analysis.paths import path_patching
from tests import sweeps
from tests.model.test_research import CLEAN, CORRUPTED, decoder
from viz.views import source


@pytest.fixture
def isolated(tmp_path, monkeypatch):
    """Sweeps shared through a folder of this test's (what install replaces is restored after the test)."""
    monkeypatch.setattr(patching_module, "once", patching_module.once)
    monkeypatch.setattr(paths, "once", paths.once)
    monkeypatch.setattr(circuits, "_vocabulary", circuits._vocabulary)
    monkeypatch.setattr(source, "needle_grid", source.needle_grid)
    sweeps.install(tmp_path)
    return tmp_path


@pytest.fixture
def counted(isolated, monkeypatch):
    """Shared sweeps with models of any size; how many sweeps really ran."""
    monkeypatch.setattr(sweeps, "MIN_PARAMS", 0)
    ran = {"patch": 0, "paths": 0, "embedding": 0}
    embed = circuits.effective_embedding

    def counted_embedding(*args, **kwargs):
        ran["embedding"] += 1
        return embed(*args, **kwargs)

    monkeypatch.setattr(circuits, "effective_embedding", counted_embedding)
    sweep, path_run = patching_module.patch_sweep, paths._path_patching

    def counted_sweep(*args, **kwargs):
        ran["patch"] += 1
        return sweep(*args, **kwargs)

    def counted_paths(*args, **kwargs):
        ran["paths"] += 1
        return path_run(*args, **kwargs)

    monkeypatch.setattr(patching_module, "patch_sweep", counted_sweep)
    monkeypatch.setattr(paths, "_path_patching", counted_paths)
    return ran


def same(a, b) -> bool:
    return (
        a.metric == b.metric
        and (a.clean, a.corrupted) == (b.clean, b.corrupted)
        and a.raw.keys() == b.raw.keys()
        and all(np.array_equal(a.raw[k], b.raw[k], equal_nan=True) for k in a.raw)
    )


def test_another_model_with_the_same_weights_reads_the_sweep_back(counted):
    model = decoder("llama")
    twin = copy.deepcopy(model)  # another object (another process's load), the same bytes
    metric = Metric(9, 3)
    first = activation_patching(model, CLEAN, CORRUPTED, metric, ("z", "resid_pre"))
    direct = path_patching(model, CLEAN, CORRUPTED, metric, [(1, 0, "v")])
    assert counted == {"patch": 2, "paths": 1, "embedding": 0}
    assert same(activation_patching(twin, CLEAN, CORRUPTED, metric, ("resid_pre", "z")), first)
    assert same(path_patching(twin, CLEAN, CORRUPTED, metric, [(1, 0, "v")]), direct)
    assert counted == {"patch": 2, "paths": 1, "embedding": 0}  # read back, nothing computed again
    path_patching(twin, CLEAN, CORRUPTED, metric, "logits")  # other receivers: computed
    activation_patching(twin, CORRUPTED, CLEAN, metric, ("z",))  # other inputs: computed
    assert counted == {"patch": 3, "paths": 2, "embedding": 0}
    with torch.no_grad():
        twin.blocks[0].attn.w_o.weight.add_(0.01)  # another weight: computed, and different
    changed = activation_patching(twin, CLEAN, CORRUPTED, metric, ("z",))
    assert counted["patch"] == 4 and not np.array_equal(changed.raw["z"], first.raw["z"])


def test_a_sweep_of_a_small_model_is_never_shared(isolated):
    activation_patching(decoder("llama"), CLEAN, CORRUPTED, Metric(9, 3), ("z",))
    assert not list(isolated.glob("*.npz"))  # under MIN_PARAMS: the process's own memo only


def test_needle_runs_read_back_as_they_were_written(tmp_path):
    rng = np.random.default_rng(0)
    arrays = lambda: (rng.random((2, 3)).astype(np.float32) for _ in sweeps.NEEDLE_ARRAYS)  # noqa: E731
    runs = tuple(
        NeedleRun(n, d, (5, 9), (1, 2, 3), r, *arrays()) for n, r in ((256, 1.0), (320, 0.25)) for d in (0, 1.0)
    )
    grid = NeedleGrid(runs, (256, 320), (0, 1.0))
    sweeps._write_needles(grid, tmp_path / "grid.npz")
    back = sweeps._read_needles(tmp_path / "grid.npz")
    assert (back.lengths, back.depths) == (grid.lengths, grid.depths)
    for a, b in zip(grid.runs, back.runs, strict=True):
        assert (a.length, a.depth, a.needle, a.generated, a.recall) == (
            b.length,
            b.depth,
            b.needle,
            b.generated,
            b.recall,
        )
        for name in sweeps.NEEDLE_ARRAYS:
            assert (
                np.array_equal(getattr(a, name), getattr(b, name)) and getattr(a, name).dtype == getattr(b, name).dtype
            )
    assert np.array_equal(back.scores(), grid.scores())


def test_another_model_with_the_same_weights_reads_the_circuit_cards_vocabulary_back(counted):
    model = decoder("llama")
    twin = copy.deepcopy(model)
    card = circuit(model, 1, 0, CLEAN)
    through_block_0 = counted["embedding"]  # the vocabulary in chunks, and the text's tokens
    assert through_block_0 >= 2
    again = circuit(twin, 1, 0, CLEAN)
    assert counted["embedding"] == through_block_0 + 1  # the text's tokens only: the vocabulary's sums read back
    assert again.copying == card.copying and again.ov_pairs == card.ov_pairs and again.reads_like == card.reads_like
