"""The research instruments' shared caches (the Causes page): the logit lens, direct logit attribution, every kind
of patching, composition and circuit cards — each computed once per model and inputs, for every user."""

from __future__ import annotations

import time

import numpy as np
import torch

from model.analysis.attribution import attribution_patching
from model.analysis.circuits import Circuit, circuit
from model.analysis.composition import composition_with
from model.analysis.lens import Lens, LogitAttribution, direct_logit_attribution, logit_lens
from model.analysis.patching import Metric, Patching, activation_patching, progress_part
from model.analysis.paths import path_patching
from viz.shell.cache import shared


@shared("Reading the stream through the head…")
def get_lens(spec, device, ids: tuple[int, ...], positions: tuple[int, ...], target: int | None, _model) -> Lens:
    return logit_lens(_model, list(ids), list(positions), target)


@shared("Attributing the logit…")
def get_logit_attribution(spec, device, ids: tuple[int, ...], target, foil, position, _model) -> LogitAttribution:
    return direct_logit_attribution(_model, list(ids), target, foil, position)


@shared("Patching…")
def get_patching_kind(spec, device, clean, corrupted, metric: Metric, kind: str, _model, _progress=None) -> Patching:
    """One kind's patching sweep (model/analysis/patching.py); ``_progress(fraction)`` follows it."""
    return activation_patching(_model, list(clean), list(corrupted), metric, (kind,), _progress)


def get_patching(spec, device, clean, corrupted, metric: Metric, kinds: tuple[str, ...], _model, _progress=None):
    """A sweep over ``kinds``, each kind's kept on its own: "heads and residual stream" after "heads" runs only the
    residual stream, for every user."""
    parts = [
        get_patching_kind(spec, device, clean, corrupted, metric, kind, _model, progress_part(_progress, i, len(kinds)))
        for i, kind in enumerate(kinds)
    ]
    return Patching.joined(metric, parts)


@shared("Composing heads…")
def get_composition(spec, device, layer: int, head: int, mode: str, _model) -> np.ndarray:
    """(layer, H): how strongly one head reads each earlier head (model/analysis/composition.py)."""
    return composition_with(_model, layer, head, mode)


@shared("Estimating every patch at once…")
def get_attribution_patching(spec, device, clean, corrupted, metric: Metric, kinds: tuple[str, ...], _model):
    """Attribution patching (model/analysis/attribution.py): one forward and one backward pass."""
    return attribution_patching(_model, list(clean), list(corrupted), metric, kinds)


@shared("Path patching…")
def get_path_patching(spec, device, clean, corrupted, metric: Metric, receivers, _model, _progress=None) -> Patching:
    """Path patching from every head to ``receivers`` (model/analysis/paths.py)."""
    return path_patching(_model, list(clean), list(corrupted), metric, receivers, _progress)


def patching_todo(spec, device, clean, corrupted, metric: Metric, kinds: tuple[str, ...], model) -> tuple[str, ...]:
    """The kinds of a sweep not run yet (by anyone): what a page estimates and asks before running."""
    return tuple(k for k in kinds if not get_patching_kind.cached(spec, device, clean, corrupted, metric, k, model))


@shared("Timing one forward pass…")
def get_pass_seconds(spec, device, n_tokens: int, _model) -> float:
    """Seconds one plain forward pass of n tokens takes here (the patching estimate multiplies it)."""
    ids = torch.zeros(1, n_tokens, dtype=torch.long, device=next(_model.parameters()).device)
    with torch.no_grad():
        _model(ids)  # the first pass pays for allocations
        began = time.perf_counter()
        _model(ids)
        return time.perf_counter() - began


@shared("Reading the head's circuits…")
def get_circuit(spec, device, layer: int, head: int, tokens: tuple[int, ...], embedding, _model) -> Circuit:
    return circuit(_model, layer, head, list(tokens), embedding=embedding)
