"""GGUF files beyond SmolLM2 — a LLaMA with an untied head, Qwen2 (Q/K/V biases), Qwen3 (QK-norm), Phi-3 (fused
QKV and gate/up, sliding window) written from the Hugging Face fixtures the way llama.cpp's converter writes them
(tests/model/gguf_from_hf.py), and a Gemma 3 file with its sentencepiece tokenizer — against what transformers
computed on the same weights."""

from __future__ import annotations

from pathlib import Path

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
    with pytest.raises(CheckpointError, match="architecture 'falcon' is not supported"):
        load_checkpoint(write_tiny_gguf(tmp_path / "falcon.gguf", arch="falcon"))


GEMMA = Path(__file__).resolve().parents[1] / "fixtures" / "gguf"
GEMMA_TEXTS = {
    "short": "The animal didn't cross the street because it was too tired.",
    "long": "The query asks, the keys answer, and the values come back: café, 東京 and  two spaces.",
}


@pytest.mark.parametrize("key", sorted(GEMMA_TEXTS))
def test_gemma3_gguf_and_its_sentencepiece_tokenizer_match_transformers(key):
    """A Gemma 3 GGUF as llama.cpp writes it (norms stored as 1 + w, a sentencepiece vocabulary without merges,
    byte fallback, BOS in front), against what transformers' own GGUF loader reads from the same file
    (scripts/make_gemma_gguf_fixture.py)."""
    loaded = load_checkpoint(GEMMA / "gemma3-tiny.gguf")
    ref = load_file(str(GEMMA / "gemma3-tiny.reference.safetensors"))
    cfg = loaded.model.cfg
    assert cfg.layer_types == ("sliding",) * 5 + ("global",) and cfg.head_dim == 256 and cfg.sandwich_norm
    enc = loaded.tokenizer.encode(GEMMA_TEXTS[key])
    assert enc.ids == tuple(ref[f"{key}.ids"].tolist()) and enc.tokens[0] == "<bos>" and enc.special[0]
    hidden, trace = run_with_cache(loaded.model, ref[f"{key}.ids"][None], kinds=["pattern"])
    assert (trace.stack("pattern")[:, 0] - ref[f"{key}.attentions"]).abs().max() <= 1e-5
    with torch.inference_mode():
        assert (loaded.model.lm_logits(hidden)[0] - ref[f"{key}.logits"]).abs().max() <= 1e-4
    assert loaded.tokenizer.inner.decode(list(enc.ids), skip_special_tokens=True) == GEMMA_TEXTS[key]
