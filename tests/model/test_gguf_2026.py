"""The decoders of issue 47 in GGUF, written from the transformers fixtures as llama.cpp's converter writes them
(tests/model/gguf_from_hf.py): Granite, OLMo 2 and Mixtral (experts in a "llama" file) match what transformers
computed; where llama.cpp takes a value from its code instead of the file (Gemma 2's attention scale, gpt-oss's SwiGLU
limit and YaRN rounding, Qwen3-MoE's renormalised experts), the file is read as llama.cpp runs it — the folder's
model given those values, which the fixtures deliberately differ from — and the report says so. gpt-oss's experts in
MXFP4 are decoded exactly: checked here against the format read byte by byte."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch
from safetensors.torch import load_file

from model.capture import run_with_cache
from model.io.checkpoint import load_checkpoint
from tests.hf_fixtures import FIXTURES
from tests.model.gguf_from_hf import write
from tests.model.test_hf_families import TEXTS

pytest.importorskip("gguf")
ARCH = {"granite": "granite", "olmo2": "olmo2", "mixtral": "llama", "qwen3_moe": "qwen3moe", "gemma2": "gemma2"}
ARCH["gpt_oss"] = "gpt-oss"


def _gaps(model, ref) -> tuple[float, float]:
    """The largest attention-weight and logit differences to ``ref`` over every text."""
    attention = logits = 0.0
    for key in TEXTS:
        hidden, trace = run_with_cache(model, ref[f"{key}.ids"][None], kinds=["pattern"])
        attention = max(attention, float((trace.stack("pattern")[:, 0] - ref[f"{key}.attentions"]).abs().max()))
        with torch.inference_mode():
            logits = max(logits, float((model.lm_logits(hidden)[0] - ref[f"{key}.logits"]).abs().max()))
    return attention, logits


def _reference(model) -> dict:
    """What ``model`` computes on the fixture's texts, in reference.safetensors' layout."""
    ref = load_file(str(FIXTURES / "llama" / "reference.safetensors"))  # only the token ids are taken from it
    out = {}
    for key in TEXTS:
        ids = ref[f"{key}.ids"]
        hidden, trace = run_with_cache(model, ids[None], kinds=["pattern"])
        with torch.inference_mode():
            logits = model.lm_logits(hidden)[0]
        out |= {f"{key}.ids": ids, f"{key}.attentions": trace.stack("pattern")[:, 0], f"{key}.logits": logits}
    return out


def _as_llama_cpp(name: str, **fields):
    """The folder's model given the values llama.cpp uses: what its GGUF must compute."""
    loaded = load_checkpoint(FIXTURES / name)
    model = type(loaded.model)(dataclasses.replace(loaded.model.cfg, **fields)).eval()
    model.load_state_dict(loaded.model.state_dict())
    return model


@pytest.mark.parametrize("name", ["granite", "olmo2", "mixtral"])
def test_matches_transformers(name, tmp_path):
    loaded = load_checkpoint(write(FIXTURES / name, tmp_path / f"{name}.gguf", ARCH[name]))
    attention, logits = _gaps(loaded.model, load_file(str(FIXTURES / name / "reference.safetensors")))
    assert attention <= 1e-5 and logits <= 1e-4, (attention, logits)
    assert "from GGUF" in loaded.report.family and sorted(loaded.report.used) == loaded.report.used


def test_granite_multipliers_and_biases_come_from_the_file(tmp_path):
    cfg = load_checkpoint(write(FIXTURES / "granite", tmp_path / "g.gguf", "granite")).model.cfg
    assert (cfg.embed_multiplier, cfg.attn_scale, cfg.logit_divisor) == (12.0, 0.5, 4.0)
    assert cfg.residual_multiplier == pytest.approx(0.22) and cfg.bias and cfg.use_o_bias


def test_qwen3_moe_renormalises_unless_the_file_says_not(tmp_path):
    ref = load_file(str(FIXTURES / "qwen3_moe" / "reference.safetensors"))  # norm_topk_prob false
    told = load_checkpoint(
        write(FIXTURES / "qwen3_moe", tmp_path / "a.gguf", "qwen3moe", keys={"expert_weights_norm": False})
    )
    assert told.model.cfg.moe_layers == (0, 2) and max(_gaps(told.model, ref)) <= 1e-5
    plain = load_checkpoint(write(FIXTURES / "qwen3_moe", tmp_path / "b.gguf", "qwen3moe"))
    assert plain.model.cfg.router_norm_topk and any("renormalised" in n for n in plain.report.notes)
    assert max(_gaps(plain.model, _reference(_as_llama_cpp("qwen3_moe", router_norm_topk=True)))) <= 1e-5
    assert _gaps(plain.model, ref)[1] > 1e-3  # llama.cpp's choice is not the fixture's


def test_gemma2_scales_as_llama_cpp_does(tmp_path):
    loaded = load_checkpoint(write(FIXTURES / "gemma2", tmp_path / "g.gguf", "gemma2"))
    cfg = loaded.model.cfg
    assert cfg.attn_softcap == 0.25 and cfg.logit_softcap == 3.0 and cfg.layer_types[:2] == ("sliding", "global")
    assert cfg.norm_offset == 0.0 and cfg.attn_scale == pytest.approx(12**-0.5)  # norms stored as 1 + w
    assert any("query_pre_attn_scalar is not in a GGUF" in n for n in loaded.report.notes)
    expected = _reference(_as_llama_cpp("gemma2", attn_scale=12**-0.5))
    assert max(_gaps(loaded.model, expected)) <= 1e-5


def test_gpt_oss_sinks_experts_and_llama_cpp_constants(tmp_path):
    loaded = load_checkpoint(write(FIXTURES / "gpt_oss", tmp_path / "o.gguf", "gpt-oss"))
    cfg = loaded.model.cfg
    assert cfg.attn_sinks and cfg.router_bias and cfg.expert_bias and cfg.rope_scaling == "yarn"
    assert cfg.layer_types == ("sliding", "global", "sliding", "global") and cfg.swiglu_limit == 7.0
    assert any("SwiGLU limit" in n for n in loaded.report.notes) and any("YaRN" in n for n in loaded.report.notes)
    expected = _reference(_as_llama_cpp("gpt_oss", swiglu_limit=7.0, rope_yarn_truncate=True))
    assert max(_gaps(loaded.model, expected)) <= 1e-5
    folder = load_checkpoint(FIXTURES / "gpt_oss").model
    assert torch.equal(loaded.model.blocks[1].attn.sinks, folder.blocks[1].attn.sinks)


def _mxfp4(raw: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """MXFP4 as ggml stores it, decoded by hand: blocks of 17 bytes, an E8M0 scale then 16 bytes whose low nibbles
    are values 0–15 and high nibbles 16–31, each an E2M1 number (OCP Microscaling spec)."""
    e2m1 = np.array([0, 0.5, 1, 1.5, 2, 3, 4, 6, -0.0, -0.5, -1, -1.5, -2, -3, -4, -6], dtype=np.float32)
    blocks = raw.reshape(-1, 17)
    scale = np.ldexp(np.float32(1), blocks[:, 0].astype(np.int32) - 127)  # (B,)
    nibbles = np.concatenate([blocks[:, 1:] & 0x0F, blocks[:, 1:] >> 4], axis=1)  # (B, 32)
    return (e2m1[nibbles] * scale[:, None]).reshape(shape)


def test_gpt_oss_mxfp4_experts_are_decoded_exactly(tmp_path):
    import gguf

    path = write(FIXTURES / "gpt_oss", tmp_path / "q.gguf", "gpt-oss", mxfp4=True)
    loaded = load_checkpoint(path)
    assert "MXFP4" in loaded.report.dtypes
    raw = next(t for t in gguf.GGUFReader(path).tensors if t.name == "blk.2.ffn_down_exps.weight")
    ours = loaded.model.blocks[2].ff.experts.down.detach().numpy()  # (E, d, f)
    assert np.array_equal(ours, _mxfp4(np.asarray(raw.data), ours.shape))
    f32 = load_checkpoint(write(FIXTURES / "gpt_oss", tmp_path / "f.gguf", "gpt-oss")).model
    assert 0 < np.abs(ours - f32.blocks[2].ff.experts.down.detach().numpy()).max() < 0.05  # 4-bit rounding only
