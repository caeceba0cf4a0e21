"""GGUF files beyond SmolLM2 — a LLaMA with an untied head, Qwen2 (Q/K/V biases), Qwen3 (QK-norm), Phi-3 (fused
QKV and gate/up, sliding window) — written the way llama.cpp's converter writes them from the Hugging Face
fixtures (tests/model/gguf_from_hf.py), against what transformers computed on the same weights."""

from __future__ import annotations

import pytest
import torch
from safetensors.torch import load_file

from model.capture import run_with_cache
from model.errors import CheckpointError
from model.io.checkpoint import load_checkpoint
from tests.model.gguf_from_hf import write
from tests.security.gguf_files import write_tiny_gguf

pytest.importorskip("gguf")
from tests.hf_fixtures import FIXTURES

CASES = {"llama": "llama", "qwen2": "qwen2", "qwen3": "qwen3", "phi3": "phi3"}


@pytest.mark.parametrize("family", sorted(CASES))
def test_gguf_of_each_family_matches_transformers(family, tmp_path):
    path = write(FIXTURES / family, tmp_path / f"{family}.gguf", CASES[family])
    loaded = load_checkpoint(path)
    ref = load_file(str(FIXTURES / family / "reference.safetensors"))
    cfg = loaded.model.cfg
    assert loaded.info["model_type"] == f"{CASES[family]} (GGUF)"
    assert cfg.tie_lm_head == (family == "qwen2") and cfg.qk_norm == (family == "qwen3")
    assert (cfg.bias, cfg.use_o_bias) == ((True, False) if family == "qwen2" else (False, False))
    for key in ("short", "long"):
        ids = ref[f"{key}.ids"]
        hidden, trace = run_with_cache(loaded.model, ids[None], kinds=["pattern"])
        assert (trace.stack("pattern")[:, 0] - ref[f"{key}.attentions"]).abs().max() <= 1e-5
        with torch.inference_mode():
            assert (loaded.model.lm_logits(hidden)[0] - ref[f"{key}.logits"]).abs().max() <= 1e-4


def test_the_files_tokenizer_gives_transformers_ids(tmp_path):
    loaded = load_checkpoint(write(FIXTURES / "qwen2", tmp_path / "q.gguf", "qwen2"))
    ref = load_file(str(FIXTURES / "qwen2" / "reference.safetensors"))
    text = "The animal didn't cross the street because it was too tired."
    assert loaded.tokenizer.encode(text).ids == tuple(ref["short.ids"].tolist())


def test_untied_head_and_refusals(tmp_path):
    untied = load_checkpoint(write_tiny_gguf(tmp_path / "untied.gguf", untied=True))
    assert not untied.model.cfg.tie_lm_head and untied.model.lm_head is not None
    with pytest.raises(CheckpointError, match="Gemma 3 GGUF files are not supported yet"):
        load_checkpoint(write_tiny_gguf(tmp_path / "gemma.gguf", arch="gemma3"))
