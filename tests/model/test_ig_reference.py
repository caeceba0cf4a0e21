"""Integrated gradients on SmolLM2 against Captum's on Hugging Face's LLaMA (tests/fixtures/ig_reference.safetensors,
made by scripts/make_ig_fixture.py: Captum's LayerIntegratedGradients, 4,096 Gauss–Legendre points, transformers'
model; nothing of ours took part in it).

SmolLM2's output climbs and falls in steep steps along the path from the padding embedding: the plain rule of 32
midpoints the page used missed f(x) − f(baseline) by 243 % (next-token logit) and 41 % (state), its per-token values
off by more than the largest of them. The adaptive rule (model/analysis/gradients.py) spends its budget where the
path's own completeness fails."""

from pathlib import Path

import numpy as np
import pytest
from safetensors.torch import load_file

from model.analysis.gradients import attribute

pytestmark = pytest.mark.slow
FIXTURE = Path(__file__).resolve().parent.parent / "fixtures" / "ig_reference.safetensors"


@pytest.fixture(scope="module")
def ref():
    return load_file(str(FIXTURE))


@pytest.mark.parametrize("target", ["next", "state"])
def test_integrated_gradients_match_captums_on_hugging_faces_model(smollm, ref, target):
    model = smollm.model
    ids, position = ref["ids"].tolist(), int(ref["position"])
    assert model.cfg.pad_token_id == int(ref["pad"])  # the same baseline: the padding token's embedding everywhere
    want = ref[f"{target}.integrated"].double().numpy()  # (N,)
    value, base = float(ref[f"{target}.value"]), float(ref[f"{target}.baseline_value"])
    assert abs(float(ref[f"{target}.delta"])) <= 0.01 * abs(value - base)  # Captum's own integral converged
    out = attribute(model, ids, position, target)
    if target == "next":
        assert out.target_token == int(ref["token"])
    assert out.value == pytest.approx(value, abs=2e-3) and out.baseline_value == pytest.approx(base, abs=2e-3)
    scale = np.abs(want).max()
    assert np.abs(out.integrated - want).max() <= 0.1 * scale
    assert out.gap <= 0.12 * abs(value - base)
    plain = attribute(model, ids, position, target, steps=32, adaptive=False)  # what the page used to compute
    assert np.abs(plain.integrated - want).max() > 0.25 * scale
