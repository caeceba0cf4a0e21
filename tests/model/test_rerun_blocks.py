"""Analyses that run blocks themselves (patching's runs from a layer, value zeroing, the effective embedding) give
each block what the forward pass gives it: a relative-position bias (T5, MPNet) or DeBERTa's relative embeddings
too (``Transformer.block_inputs``). Without them a T5 decoder's unpatched run from layer 0 scored 0.82 where its
plain run scores 1.74, and every patched cell was measured against the wrong model."""

from __future__ import annotations

import functools

import numpy as np
import pytest
import torch

from model.analysis.patching import Metric, cache_run, run_from, score
from model.capture import capture, hook_name
from model.io.catalog import ModelSpec
from tests.hf_fixtures import FIXTURES
from viz.views.source import DirectSource

TEXT = "the cat sat on the mat because it was tired"
#: position inside the scores (a bias, DeBERTa's terms), a decoder reading an encoder, and plain ones to compare
FAMILIES = ["../hf_encdec/t5", "mpnet", "deberta-v2", "../hf_heads/deberta_v2_mlm", "llama", "gemma2", "bert"]


@functools.cache
def loaded(folder: str):
    src = DirectSource.for_text(ModelSpec("folder", path=str(FIXTURES / folder)), TEXT)
    return src.loaded.model, list(src.obs.ids)


@pytest.mark.parametrize("folder", FAMILIES)
def test_a_block_run_again_on_its_captured_input_gives_its_captured_output(folder):
    model, ids = loaded(folder)
    with torch.inference_mode():
        with capture(model, kinds=("resid_pre", "resid_post")) as trace:
            model(torch.tensor([ids]))
        masks = model.build_masks(len(ids), None, model.cfg.causal, torch.device("cpu"))
        for layer in range(model.cfg.n_layers):
            x, y = trace.get("resid_pre", layer), trace.get("resid_post", layer)
            again = model.blocks[layer](x, mask=masks[layer], layer=layer, **model.block_inputs(len(ids)))
            torch.testing.assert_close(again, y, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("folder", ["../hf_encdec/t5", "../hf_heads/deberta_v2_mlm", "llama", "gemma2"])
def test_an_unpatched_run_from_any_layer_scores_what_the_plain_run_scores(folder):
    model, ids = loaded(folder)
    metric = Metric(answer=ids[2], foil=ids[3])
    plain = score(model, ids, metric)
    kept = cache_run(model, ids)
    for layer in range(model.cfg.n_layers):
        start = kept[hook_name("resid_pre", layer)]
        assert float(run_from(model, start, layer, metric, None, "", 1)[0]) == pytest.approx(plain, abs=1e-4)


#: causal families: a plain decoder, sliding windows and a soft cap, sinks, experts, one reading an encoder (a bias)
CAUSAL = ["llama", "../hf_encdec/t5", "gemma2", "gpt_oss", "qwen3_moe", "mistral"]


@pytest.mark.parametrize("folder", [*CAUSAL[:2], *(pytest.param(f, marks=pytest.mark.slow) for f in CAUSAL[2:])])
@pytest.mark.parametrize("position", [-1, 5])
def test_a_causal_models_patched_runs_from_the_patched_position_match_the_whole_runs(folder, position, monkeypatch):
    """Patching a causal model: each run starts at the first position its batch patches, the receiving run's keys
    and values standing in for the positions before it. Every cell matches the runs over the whole text (the metric
    at the last position, or at an earlier one, where later patches change nothing)."""
    from model.analysis import patching

    model, ids = loaded(folder)
    corrupted = [*ids[:3], ids[4], *ids[4:]]
    metric = Metric(answer=ids[2], foil=ids[3], position=position)
    assert patching.reuses_prefix(model)
    donor = cache_run(model, ids)
    whole = patching.patch_sweep(model, cache_run(model, corrupted), donor, metric)
    monkeypatch.setattr(patching, "MAX_BATCH", 3)  # batches of three positions: several starting points
    reused = patching.patch_sweep(model, cache_run(model, corrupted, keys=True), donor, metric)
    for kind in patching.PATCH_KINDS:
        np.testing.assert_allclose(reused[kind], whole[kind], atol=2e-4, rtol=1e-4, err_msg=kind)
    if position == 5:  # two tokens after the corruption, inside every window: the patches change the metric
        assert np.ptp(whole["resid_pre"]) > 1e-3


def test_the_estimate_shown_before_a_sweep_counts_what_a_causal_model_skips():
    from model.analysis.patching import patching_passes

    whole = patching_passes(30, 70, 9, ["resid_pre", "z"])
    assert whole == pytest.approx(15.5 * (70 + 9))
    # batches of 16 positions from 0, 16, 32, 48 and 64 compute 70, 54, 38, 22 and 6 positions each
    share = (16 * (70 + 54 + 38 + 22) + 6 * 6) / 70**2
    assert patching_passes(30, 70, 9, ["resid_pre", "z"], prefix=True) == pytest.approx(15.5 * (70 * share + 9))
    assert patching_passes(30, 14, 9, ["resid_pre"], prefix=True) == patching_passes(30, 14, 9, ["resid_pre"])
