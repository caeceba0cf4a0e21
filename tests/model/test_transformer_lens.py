"""Our patching, direct logit attribution, logit lens, backward hooks, attribution patching and composition scores
against TransformerLens's own on the same tiny GPT-2 (tests/fixtures/transformer_lens/, made by
scripts/make_transformer_lens_fixture.py with transformer_lens 4.3.0; the project never imports it)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from safetensors.torch import load_file

from model.analysis.attribution import attribution_patching
from model.analysis.composition import composition_scores
from model.analysis.lens import direct_logit_attribution, logit_lens
from model.analysis.patching import PATCH_KINDS, Metric, activation_patching
from model.intervene import run_with_hooks
from model.io.checkpoint import load_checkpoint

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "transformer_lens"


@pytest.fixture(scope="module")
def case():
    ref = {
        k: v.double() if v.is_floating_point() else v for k, v in load_file(FIXTURE / "reference.safetensors").items()
    }
    model = load_checkpoint(FIXTURE / "gpt2").model.double().eval()
    return model, ref


def test_the_prompts_give_the_same_logit_differences(case):
    model, ref = case
    answer, foil = ref["answer_foil"].tolist()
    for which in ("clean", "corrupted"):
        logits = run_with_hooks(model, ref[f"{which}_ids"].tolist(), return_type="logits")[0, -1]
        assert float(logits[answer] - logits[foil]) == pytest.approx(float(ref[f"{which}_logit_diff"]), abs=1e-5)
    assert float(ref["clean_logit_diff"] - ref["corrupted_logit_diff"]) > 1.0  # a real gap to recover


def test_activation_patching_equals_transformer_lens(case):
    model, ref = case
    answer, foil = ref["answer_foil"].tolist()
    result = activation_patching(model, ref["clean_ids"].tolist(), ref["corrupted_ids"].tolist(), Metric(answer, foil))
    for kind in PATCH_KINDS:
        theirs = ref[f"patch_{kind}"].numpy()  # TransformerLens stores its sweeps in float32
        assert result.raw[kind].shape == theirs.shape
        assert np.abs(result.raw[kind] - theirs).max() <= 2e-5, kind


def test_direct_logit_attribution_equals_transformer_lens(case):
    """TransformerLens centres each part and divides it by the final norm's cached scale, then dots it with
    W_U[answer] − W_U[foil]: the same linearisation, so the same numbers. Two conventions differ: it folds what each
    head writes whatever the text (its constant value: ln1's bias through W_V, plus b_V) into b_O (so its heads are
    ours minus ``value_biases``) and the final norm's bias into b_U
    (so its parts sum to the logit difference minus ``norm_bias``)."""
    model, ref = case
    answer, foil = ref["answer_foil"].tolist()
    dla = direct_logit_attribution(model, ref["clean_ids"].tolist(), answer, foil)
    assert np.abs(dla.heads - dla.value_biases - ref["dla_heads"].numpy()).max() <= 1e-6
    assert np.abs(dla.value_biases).max() > 0.01  # GPT-2 has value biases: the convention matters here
    assert np.abs(dla.mlps - ref["dla_mlps"].numpy()).max() <= 1e-6
    assert dla.total - dla.norm_bias == pytest.approx(float(ref["dla_total"]), abs=1e-6)
    assert dla.total == pytest.approx(float(ref["clean_logit_diff"]), abs=1e-5)


def test_the_logit_lens_equals_transformer_lens(case):
    model, ref = case
    lens = logit_lens(model, ref["clean_ids"].tolist(), positions=[-1], k=5)
    theirs = torch.softmax(ref["lens_logits"], -1)  # (L + 1, V), TransformerLens's centred unembedding
    assert np.array_equal(lens.top_ids[:, 0], theirs.topk(5).indices.numpy())
    assert np.abs(lens.top_probs[:, 0] - theirs.topk(5).values.numpy()).max() <= 1e-6


def test_backward_hooks_and_attribution_patching_equal_transformer_lens(case):
    """TransformerLens's bwd_hooks on every hook_z of the corrupted run give the gradients ours give, and attribution
    patching of z computed from them as Nanda's demo does equals ours (its z is (B, N, H, d_k), ours (B, H, N, d_k))."""
    model, ref = case
    answer, foil = ref["answer_foil"].tolist()
    grads = {}
    run_with_hooks(
        model,
        ref["corrupted_ids"].tolist(),
        bwd_hooks=[(lambda name: name.endswith("attn.hook_z"), lambda g, hook: grads.__setitem__(hook.layer, g))],
        loss=lambda logits: logits[0, -1, answer] - logits[0, -1, foil],
        return_type="logits",
    )
    ours = torch.stack([grads[i][0].transpose(0, 1) for i in range(3)])  # (L, N, H, d_k)
    assert torch.abs(ours - ref["grad_z"]).max() <= 1e-6  # its folded weights went through float32: ~3e-7 here
    estimate = attribution_patching(
        model, ref["clean_ids"].tolist(), ref["corrupted_ids"].tolist(), Metric(answer, foil)
    )
    theirs = ref["attribution_z"].numpy() + float(ref["corrupted_logit_diff"])
    assert np.abs(estimate.raw["z"] - theirs).max() <= 1e-6


@pytest.mark.parametrize("mode", ["Q", "K", "V"])
def test_composition_scores_equal_transformer_lens(case, mode):
    model, ref = case
    ours = composition_scores(model, mode)
    theirs = ref[f"composition_{mode}"].numpy()
    assert ours.shape == theirs.shape == (3, 4, 3, 4)
    assert np.abs(ours - theirs).max() <= 1e-8  # 4e-9 here (its weight processing rounds through float32)
    assert theirs[0, :, 1:].min() > 0.05  # real scores, not the masked zeros
