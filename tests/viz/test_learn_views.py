"""The views of a training run: what they draw is the run's snapshots, and their captions are computed from it."""

from __future__ import annotations

import re

import numpy as np
import pytest
import torch

from model.learn.loop import TrainSpec, train
from viz.figures.common import Theme
from viz.figures.learn import before_after, learning_curves
from viz.views.learn import Progress, curves, frame, heads, moments, summary


@pytest.fixture(scope="module")
def progress():
    return Progress(train(TrainSpec(n_layers=2, n_heads=2, d_model=16, steps=40, snapshot_every=10, batch=8)))


@pytest.mark.slow
def test_the_curves_draw_the_loss_and_every_heads_score(progress):
    view = curves(progress, Theme(), now=20, chosen=(1, 0))
    fig = view.figure
    names = [t.name for t in fig.data]
    assert names[:3] == ["training loss", "training loss, smoothed", "held-out loss"]
    assert names[3:] == ["L0H0", "L0H1", "L1H0", "L1H1"]
    assert np.allclose(fig.data[0].y, progress.losses)
    assert list(fig.data[3].x) == [0, 10, 20, 30, 40]
    assert np.allclose(fig.data[5].y, [s.scores["task"][1, 0] for s in progress.snaps])
    assert fig.data[5].line.width > fig.data[6].line.width  # the chosen head stands out
    assert any(a.text.strip() == "shown: step 20" for a in fig.layout.annotations)
    slide = view.slide()  # the slider's marker is the screen's, never a slide's
    assert not any("shown: step" in (a.text or "") for a in slide.layout.annotations)
    entropy = curves(progress, Theme(), score="entropy").figure
    assert np.allclose(entropy.data[3].y, [s.scores["entropy"][0, 0] for s in progress.snaps])
    assert not any("formed at" in (a.text or "") for a in entropy.layout.annotations)


def test_no_two_heads_curves_look_alike_without_colour():
    """Each head's line differs from every other's in its dash or its marker, not only in hue (a reader with a
    colour-vision deficiency, or a grey printout), and its hue is the CVD-safe head palette."""
    from viz.figures.headview import HEAD_COLOURS

    L, H, K = 4, 4, 6
    fig = learning_curves(np.ones(30), np.arange(K) * 5, np.ones(K), np.random.default_rng(0).random((K, L, H)))
    heads = [t for t in fig.data if re.fullmatch(r"L\d+H\d+", t.name or "")]
    looks = {(t.line.dash, t.marker.symbol) for t in heads}
    assert len(heads) == L * H and len(looks) == L * H
    assert {t.line.color for t in heads} <= set(HEAD_COLOURS)


def test_the_phase_change_is_marked_where_the_detector_puts_it():
    losses = np.r_[np.full(200, 3.0), np.full(200, 0.5)]
    fig = learning_curves(losses, [0, 200, 400], [3.0, 1.5, 0.5], np.zeros((3, 1, 2)), phase=201)
    assert any(a.text.strip() == "phase change: step 201" for a in fig.layout.annotations)
    assert any(s.x0 == 201 and s.x1 == 201 for s in fig.layout.shapes)
    with pytest.raises(ValueError):
        learning_curves(losses, [0, 200], [3.0, 1.5, 0.5], np.zeros((3, 1, 2)))


def test_a_frame_and_the_grid_draw_the_snapshots_patterns(progress):
    view = frame(progress, Theme(), index=2, chosen=(1, 1))
    snap = progress.snaps[2]
    want = snap.patterns[1, 1].float().numpy()
    z = np.asarray(view.figure.data[0].z, dtype=float)
    future = np.triu(np.ones_like(want, dtype=bool), 1)  # the causal mask: drawn grey, not as zero weights
    assert np.isnan(z[future]).all() and np.allclose(z[~future], want[~future], atol=1e-6)
    assert view.title == "L1H1 at step 20"
    assert f"{float(snap.scores['task'][1, 1]):.2f}" in view.caption
    grid = heads(progress, Theme(), index=2, chosen=(1, 1))
    assert grid.figure.layout.shapes  # the chosen head outlined
    assert grid.caption.startswith("Step 20:")


def test_before_at_after_draws_three_steps_of_one_head(progress):
    view = moments(progress, Theme(), chosen=(0, 1))
    idx = progress.moments()
    shown = [t for t in view.figure.data if t.type == "heatmap" and t.name != "masked"]
    shown = [t for t in shown if np.isfinite(np.asarray(t.z, dtype=float)).any()]
    assert len(shown) == 3
    for trace, i in zip(shown, idx, strict=True):
        z, want = np.asarray(trace.z, dtype=float), progress.snaps[i].patterns[0, 1].float().numpy()
        assert np.allclose(z[np.isfinite(z)], want[np.tril(np.ones_like(want, dtype=bool))], atol=1e-6)
    steps = [int(s.replace(",", "")) for s in re.findall(r"step ([\d,]+)\)", view.caption)]
    assert steps == [progress.snaps[i].step for i in idx]
    with pytest.raises(ValueError):
        before_after(np.zeros((2, 4, 4)), list("abcd"), [1, 2, 3], head="L0H0")


def test_the_summary_names_the_heads_that_formed_and_the_loss_then():
    run = train(TrainSpec(n_layers=1, n_heads=2, d_model=16, steps=40, snapshot_every=10, batch=8))
    progress = Progress(run)
    text = summary(progress)
    assert text.startswith("No head has reached an induction score of 0.5 after 40 of 40 steps; the best is L0H")
    for snap in run.snapshots:  # plant a head that forms at step 20
        snap.scores["task"][0, 1] = 0.9 if snap.step >= 20 else 0.1
    planted = summary(Progress(run))
    assert planted.startswith("L0H1 became an induction head at step 20")
    assert f"accuracy {run.snapshots[-1].accuracy:.0%}" in planted


def test_a_shifted_induction_head_is_named_when_no_head_formed():
    from viz.views.learn import shifted_induction

    run = train(TrainSpec(n_layers=2, n_heads=2, d_model=16, steps=20, snapshot_every=10, batch=8))
    snap = run.snapshots[-1]
    n, period = snap.patterns.shape[-1], (snap.patterns.shape[-1] - 1) // 2
    planted = torch.zeros(n, n)
    planted[:, 0] = 1.0
    for q in range(period + 1, n - 1):  # three tokens after the earlier occurrence
        planted[q] = 0.0
        planted[q, q - period + 3] = 1.0
    for s in run.snapshots:
        s.patterns[1, 0] = planted.half()
    text = shifted_induction(Progress(run))
    assert text.startswith("It found another circuit: L1H0 attends 3 tokens after the earlier occurrence")
    assert "(mean weight 1.00)" in text
    assert "It found another circuit" in summary(Progress(run))
    sort = train(TrainSpec(task="sort", n_layers=1, n_heads=1, d_model=16, steps=10, snapshot_every=10, batch=4))
    assert shifted_induction(Progress(sort)) == ""


def test_the_pages_choices_are_the_models():
    from model.learn.tasks import TASKS
    from viz.settings import LEARN_SCORES, LEARN_TASKS
    from viz.views.learn import SCORES

    assert LEARN_SCORES == SCORES and sorted(LEARN_TASKS) == sorted(TASKS)
    run = train(TrainSpec(n_layers=1, n_heads=2, d_model=16, steps=10, snapshot_every=10, batch=4))
    assert set(run.snapshots[-1].scores) == set(SCORES)
    progress = Progress(run)
    fig = curves(progress, Theme(), score="mean_distance").figure
    assert np.allclose(fig.data[3].y, [s.scores["mean_distance"][0, 0] for s in run.snapshots])
