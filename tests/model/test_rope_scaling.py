"""Scaled RoPE against transformers (tests/fixtures/hf_rope, made by scripts/make_rope_fixtures.py): linear, dynamic
NTK, Llama 3.x, YaRN and LongRoPE decoders read a text shorter and one longer than their original context — the ids,
every attention weight within 1e-5, the logits within 1e-4 — and the frequencies match transformers' formulas."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from model.capture import run_with_cache
from model.io.checkpoint import load_checkpoint
from model.rope_scaling import RopeScaling, frequencies

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "hf_rope"
TEXTS = {
    "short": "The animal didn't cross.",
    "long": "The query asks, the keys answer, and the values come back weighted by how well each key fits.",
}
KINDS = {"linear": "linear", "dynamic": "dynamic", "llama3": "llama3", "yarn": "yarn", "longrope": "longrope"}


@pytest.fixture(scope="module", params=sorted(KINDS))
def scaled(request):
    folder = FIXTURES / request.param
    return request.param, load_checkpoint(folder), load_file(str(folder / "reference.safetensors"))


def test_the_scaling_is_read_from_config_json(scaled):
    name, loaded, _ = scaled
    cfg = loaded.model.cfg
    params = json.loads((FIXTURES / name / "config.json").read_text())["rope_parameters"]
    assert cfg.rope_scaling == KINDS[name] and cfg.rope_factor == params.get("factor", cfg.rope_factor)
    if name == "dynamic":  # reads its factor × max_position_embeddings, unscaled up to max_position_embeddings
        assert cfg.rope_original_max == 16 and cfg.max_seq_len == 128
    if name == "longrope":
        assert cfg.rope_short_factor == pytest.approx(params["short_factor"]) and cfg.rope_original_max == 16
    assert not loaded.warnings


@pytest.mark.parametrize("key", sorted(TEXTS))
def test_matches_transformers(scaled, key):
    name, loaded, ref = scaled
    ids = ref[f"{key}.ids"]
    assert loaded.tokenizer.encode(TEXTS[key]).ids == tuple(ids.tolist())
    if key == "long":  # the long text goes past the original context: the scaling's long regime is read
        assert len(ids) > max(loaded.model.cfg.rope_original_max, 16)
    hidden, trace = run_with_cache(loaded.model, ids[None], kinds=["pattern"])
    assert (trace.stack("pattern")[:, 0] - ref[f"{key}.attentions"]).abs().max() <= 1e-5, name
    with torch.inference_mode():
        logits = loaded.model.lm_logits(hidden)[0, -4:]
    assert (logits - ref[f"{key}.logits"]).abs().max() <= 1e-4, name


def test_the_scaling_changes_what_is_read(scaled):
    """Without its scaling the same weights give other patterns on the long text (what a dropped scaling shows)."""
    from model.transformer import Transformer

    name, loaded, ref = scaled
    cfg = loaded.model.cfg
    unscaled = Transformer(cfg.replace(rope_scaling="", rope_short_factor=(), rope_long_factor=())).eval()
    unscaled.load_state_dict(loaded.model.state_dict())
    _, trace = run_with_cache(unscaled, ref["long.ids"][None], kinds=["pattern"])
    assert (trace.stack("pattern")[:, 0] - ref["long.attentions"]).abs().max() > 1e-3, name


def test_llama3_frequencies_keep_short_wavelengths_and_divide_long_ones():
    s = RopeScaling("llama3", factor=8.0, original=8192, low_freq_factor=1.0, high_freq_factor=4.0)
    plain, _ = frequencies(None, 128, 500000.0)
    scaled, factor = frequencies(s, 128, 500000.0)
    wavelen = 2 * math.pi / plain
    assert factor == 1.0
    assert torch.equal(scaled[wavelen < 8192 / 4], plain[wavelen < 8192 / 4])
    assert torch.allclose(scaled[wavelen > 8192], plain[wavelen > 8192] / 8)


def test_dynamic_and_longrope_depend_on_the_length_read():
    d = RopeScaling("dynamic", factor=4.0, original=16)
    assert torch.equal(frequencies(d, 8, 10000.0, 16)[0], frequencies(None, 8, 10000.0)[0])
    assert frequencies(d, 8, 10000.0, 64)[0][1] < frequencies(d, 8, 10000.0, 32)[0][1]  # longer: slower turns
    lr = RopeScaling("longrope", factor=8.0, original=16, short=(1.0, 1.0), long=(2.0, 4.0))
    assert torch.equal(frequencies(lr, 4, 10000.0, 16)[0], frequencies(None, 4, 10000.0)[0])
    assert frequencies(lr, 4, 10000.0, 17)[1] == pytest.approx(math.sqrt(1 + math.log(8) / math.log(16)))


def test_llama3_in_gguf_reads_rope_freqs(tmp_path):
    """llama.cpp writes Llama 3.x's scaling as rope_freqs.weight (per-frequency divisors): the GGUF of the llama3
    fixture, written as its converter writes it, matches what transformers computed on the folder."""
    from tests.model.gguf_from_hf import write

    path = write(FIXTURES / "llama3", tmp_path / "llama3.gguf", "llama")
    loaded = load_checkpoint(path)
    cfg = loaded.model.cfg
    assert cfg.rope_scaling == "factors" and len(cfg.rope_short_factor) == cfg.d_k // 2
    assert "rope_freqs.weight" in loaded.report.used and any("Llama 3.x" in n for n in loaded.report.notes)
    ref = load_file(str(FIXTURES / "llama3" / "reference.safetensors"))
    for key in TEXTS:
        hidden, trace = run_with_cache(loaded.model, ref[f"{key}.ids"][None], kinds=["pattern"])
        assert (trace.stack("pattern")[:, 0] - ref[f"{key}.attentions"]).abs().max() <= 1e-5
        with torch.inference_mode():
            assert (loaded.model.lm_logits(hidden)[0, -4:] - ref[f"{key}.logits"]).abs().max() <= 1e-4


def test_a_table_made_in_inference_mode_does_not_break_a_later_pass_with_gradients(scaled):
    """The tables a pass keeps (a length-dependent RoPE's for the last long text, a table grown for a longer text)
    were inference tensors when that pass ran in ``torch.inference_mode`` (every page's does): Beyond the weights'
    gradient methods then raised "Inference tensors cannot be saved for backward" (dynamic NTK, LongRoPE)."""
    from model.analysis.gradients import attribute

    _, loaded, _ = scaled
    model = loaded.model
    ids = loaded.tokenizer.encode(TEXTS["long"]).ids
    rope = model.blocks[0].attn.rope
    with torch.inference_mode():
        model(torch.tensor([list(ids)]))
        rope.fill_tables(rope.cos.size(0) + 1) if rope.cos.size(0) < rope._size[0] else None  # a table grown here
    for table in (rope.cos, rope.sin, *(rope._long[1:] if rope._long is not None else ())):
        assert not table.is_inference()
    result = attribute(model, list(ids), len(ids) - 1)
    assert torch.isfinite(torch.as_tensor(result.integrated)).all()


def test_a_rope_table_grown_in_inference_mode_still_takes_gradients():
    """Any RoPE: a text longer than the first table (4,096 positions) grows it; grown inside inference_mode, the
    table was an inference tensor, and a later pass with gradients over it raised."""
    from model.positional import ROPE_FIRST_POSITIONS, RotaryEmbedding

    rope = RotaryEmbedding(8, 2 * ROPE_FIRST_POSITIONS)
    with torch.inference_mode():
        rope(torch.zeros(1, 1, ROPE_FIRST_POSITIONS + 1, 8))  # grows the tables
    assert rope.cos.size(0) > ROPE_FIRST_POSITIONS and not rope.cos.is_inference() and not rope.sin.is_inference()
    x = torch.randn(1, 1, ROPE_FIRST_POSITIONS + 1, 8, requires_grad=True)
    rope(x).pow(2).sum().backward()
    assert x.grad is not None and torch.isfinite(x.grad).all()
