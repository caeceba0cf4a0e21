"""The real all-mpnet-base-v2 (optional: the five part packages, 405 MB) against what transformers computed on it
(tests/fixtures/mpnet_reference.safetensors, made by scripts/make_mpnet_fixture.py): the same token ids, the
attention patterns within 1e-5 and the last hidden state within 1e-4, on a text long enough to reach the
log-spaced relative buckets. Skipped when the packages are not installed (the CI installs them)."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from model.capture import run_with_cache
from model.io.catalog import ModelSpec, available, load
from model.io.mpnet_package import mpnet_installed

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not mpnet_installed(), reason="all-mpnet-base-v2's part packages are not installed"),
]
REF = Path(__file__).resolve().parents[1] / "fixtures" / "mpnet_reference.safetensors"
TEXTS = {
    "short": "The animal didn't cross the street because it was too tired.",
    "long": "The query asks, the keys answer, and the values come back weighted by how well each key fits the query; "
    "far apart tokens share the relative-position buckets that a long sentence reaches.",
}


@pytest.fixture(scope="module")
def mpnet():
    assert available("mpnet")[0]
    return load(ModelSpec("mpnet"))


@pytest.mark.parametrize("key", sorted(TEXTS))
def test_the_real_model_matches_transformers(mpnet, key):
    ref = load_file(str(REF))
    ids = ref[f"{key}.ids"]
    assert mpnet.tokenizer.encode(TEXTS[key]).ids == tuple(ids.tolist())
    assert mpnet.model.cfg.relative_bias and mpnet.model.cfg.n_layers == 12
    hidden, trace = run_with_cache(mpnet.model, ids[None], kinds=["pattern"])
    layers = range(12) if key == "short" else (6, 11)
    for i, layer in enumerate(layers):
        diff = float((trace.get("pattern", layer)[0] - ref[f"{key}.attentions"][i]).abs().max())
        assert diff <= 1e-5, (key, layer, diff)
    assert float((hidden[0] - ref[f"{key}.hidden"]).abs().max()) <= 1e-4
    if key == "long":
        assert len(ids) > 24  # distances beyond the exact buckets (8 each side): the log-spaced ones are read
    with torch.inference_mode():
        bias = mpnet.model.position_bias(len(ids))[0]  # (H, N, N)
    assert bias.abs().max() > 0.5  # the bias is a real part of the scores


def test_the_catalog_names_it_and_its_licence(mpnet):
    assert mpnet.name == "all-mpnet-base-v2" and "Apache-2.0" in mpnet.info["source"]
    assert not mpnet.report.left_out.keys() - {"pooler.dense.weight", "pooler.dense.bias"}
