"""T5 (v1.0 and v1.1 / FLAN), BART and mBART folders against what transformers computed on them
(tests/fixtures/hf_encdec, made by scripts/make_encdec_fixtures.py): the same token ids for the source and for the
decoder's input, every encoder, decoder and cross-attention weight within 1e-5, the encoder's last hidden state and the
decoder's logits within 1e-4 — through the path every page takes (one stack opened, the source bound)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest
import torch
from safetensors.torch import load_file

from model.capture import run_with_cache
from model.encdec import EncoderDecoder
from model.io.catalog import ModelSpec, digest, load
from model.io.checkpoint import load_checkpoint
from model.io.families.encdec import open_stack
from tests.hf_fixtures import zipped

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "hf_encdec"
CASES = sorted(p.name for p in FIXTURES.iterdir() if (p / "config.json").is_file())
PAIRS = {
    "short": ("The animal didn't cross the street because it was too tired.", "The animal was tired."),
    "long": (
        "The query asks, the keys answer, and the values come back weighted by how well each key fits the query.",
        "Each key answers the query, and the values come back weighted.",
    ),
}
#: what each case must come in as
EXPECTED = {
    "t5": dict(norm_kind="rmsnorm", relative_bias=True, attn_scale=1.0, activation="relu", positional="none"),
    "t5_v1_1": dict(norm_kind="rmsnorm", relative_bias=True, activation="geglu_tanh", bias=False),
    "bart": dict(norm="post", position_offset=2, embedding_layer_norm=True, bias=True, scale_embeddings=True),
    "mbart": dict(norm="pre", position_offset=2, embedding_layer_norm=True, final_layer_norm=True),
}
DECODER = {
    "t5": dict(logit_divisor=32**0.5, tie_lm_head=True, causal=True, n_layers=3, rel_buckets=16),
    "t5_v1_1": dict(logit_divisor=1.0, tie_lm_head=False, n_layers=3),
    "bart": dict(lm_bias=True, tie_lm_head=True, cross_attention=True, d_ff=48),
    "mbart": dict(lm_bias=True, norm="pre"),
}


def test_every_case_has_a_fixture():
    assert set(CASES) == set(EXPECTED) == set(DECODER)


@pytest.fixture(scope="module", params=CASES)
def case(request):
    folder = FIXTURES / request.param
    return request.param, load_checkpoint(folder), load_file(str(folder / "reference.safetensors"))


def test_config_translation(case):
    name, loaded, _ = case
    model = loaded.model
    assert isinstance(model, EncoderDecoder) and not loaded.warnings
    for field, value in EXPECTED[name].items():
        assert getattr(model.encoder.cfg, field) == value, (name, field)
        assert getattr(model.decoder.cfg, field) == value or field in ("causal",), (name, field)
    for field, value in DECODER[name].items():
        assert getattr(model.decoder.cfg, field) == value, (name, field, getattr(model.decoder.cfg, field))
    assert model.decoder.cfg.cross_attention and not model.encoder.cfg.causal
    for stack in (model.encoder, model.decoder):  # cross-attention, relative tables and BART's logit bias counted
        assert stack.cfg.parameter_count() == sum(p.numel() for p in stack.parameters())
    assert loaded.report.unread == ["reference.safetensors"] and not loaded.report.left_out  # every tensor is read
    assert loaded.report.tokenizer == "tokenizer.json" and "shared.weight" in " ".join(loaded.report.used)


def _max(a: torch.Tensor, b: torch.Tensor) -> float:
    return float((a - b).abs().max())


@pytest.mark.parametrize("key", sorted(PAIRS))
def test_matches_transformers(case, key):
    name, loaded, ref = case
    source, target = PAIRS[key]
    encoder = open_stack(loaded, "encoder")
    assert encoder.tokenizer.encode(source).ids == tuple(ref[f"{key}.ids"].tolist())
    hidden, trace = run_with_cache(encoder.model, ref[f"{key}.ids"][None], kinds=["pattern"])
    for layer in range(encoder.model.cfg.n_layers):
        assert _max(trace.get("pattern", layer)[0], ref[f"{key}.encoder_attentions"][layer]) <= 1e-5, (name, layer)
    assert _max(hidden[0], ref[f"{key}.encoder_hidden"]) <= 1e-4

    decoder = open_stack(loaded, "decoder", source)
    assert decoder.info["source_tokens"] == list(encoder.tokenizer.encode(source).tokens)
    ids = ref[f"{key}.decoder_ids"]
    assert decoder.tokenizer.encode(target).ids == tuple(ids[: len(ids)].tolist())  # the labels shifted right
    hidden, trace = run_with_cache(decoder.model, ids[None], kinds=["pattern", "cross_pattern"])
    for layer in range(decoder.model.cfg.n_layers):
        assert _max(trace.get("pattern", layer)[0], ref[f"{key}.decoder_attentions"][layer]) <= 1e-5, (name, layer)
        assert _max(trace.get("cross_pattern", layer)[0], ref[f"{key}.cross_attentions"][layer]) <= 1e-5
    with torch.inference_mode():
        assert _max(decoder.model.lm_logits(hidden)[0], ref[f"{key}.logits"]) <= 1e-4


#: what each fixture exercises, and the decoder's config without it: the same weights must then miss transformers
WITHOUT = {
    "t5": {"relative_bias": False, "logit_divisor": 1.0, "attn_scale": 0.0},
    "t5_v1_1": {"rel_max_distance": 128},
    "bart": {"lm_bias": False, "scale_embeddings": False},
}


@pytest.mark.parametrize(("name", "field"), [(n, f) for n, fields in WITHOUT.items() for f in fields])
def test_the_fixture_matches_only_with_the_feature(name, field):
    folder = FIXTURES / name
    loaded, ref = load_checkpoint(folder), load_file(str(folder / "reference.safetensors"))
    model = loaded.model
    dec = dataclasses.replace(model.decoder.cfg, **{field: WITHOUT[name][field]})
    enc = dataclasses.replace(model.cfg, **{field: WITHOUT[name][field]}) if field != "lm_bias" else model.cfg
    other = EncoderDecoder(enc, dec).eval()
    other.load_state_dict(model.state_dict(), strict=False)
    with torch.inference_mode():
        logits = other.lm_logits(other(ref["long.ids"][None], ref["long.decoder_ids"][None]))[0]
    assert _max(logits, ref["long.logits"]) > 1e-2


def test_path_and_zip_upload_open_the_same_model():
    folder = FIXTURES / "bart"
    data = zipped(folder)
    one = load(ModelSpec("folder", path=str(folder)))
    two = load(ModelSpec("upload", digest=digest(data), name="bart.zip"), data)
    for stack, causal in (("encoder", False), ("decoder", True)):
        a = load(ModelSpec("folder", path=str(folder), stack=stack, source_text="a source"))
        b = load(ModelSpec("upload", digest=digest(data), name="bart.zip", stack=stack, source_text="a source"), data)
        assert not isinstance(a.model, EncoderDecoder) and a.model.cfg == b.model.cfg
        assert a.model.cfg.causal is causal and a.model.cfg.cross_attention is causal
        if causal:
            assert a.info["source_text"] == "a source" and a.info["source_tokens"] == b.info["source_tokens"]
            assert a.info["source_tokens"][0] == "<s>" and a.name.endswith("— its decoder")
    pair = load(ModelSpec("folder", path=str(folder), stack="pair"))
    assert isinstance(pair.model, EncoderDecoder) and isinstance(one.model, EncoderDecoder) is False
    assert one.model.cfg.cross_attention and one.model.cfg == two.model.cfg  # a pair opens its decoder by default


def test_the_block_drawn_from_a_decoders_config_has_its_cross_attention():
    from model.anatomy import anatomy

    for name, norm in (("t5", "pre"), ("bart", "post")):
        decoder = open_stack(load_checkpoint(FIXTURES / name), "decoder", "a source").model
        a = anatomy(decoder.cfg)
        rows = {p.key: p.row for p in a.parts}
        assert rows["attn"] < rows["cross"] < rows["ff"], (name, rows)  # self-attention, cross-attention, FF
        assert ("source", "cross") in a.edges and a.part("source").row == rows["cross"]
        assert a.summary.lower().startswith(f"{norm}-norm")
        encoder = anatomy(open_stack(load_checkpoint(FIXTURES / name), "encoder").model.cfg)
        assert "cross" not in {p.key for p in encoder.parts}
    t5 = anatomy(open_stack(load_checkpoint(FIXTURES / "t5"), "encoder").model.cfg)
    assert "relative distances" in t5.part("embed").detail and "learned bias" in t5.part("attn").detail


@pytest.mark.parametrize("name", ["t5", "bart"])
def test_the_decoder_writes_a_target_greedily_with_its_cache(name):
    """The Next token page's generation on a decoder reading a source: the cached steps (relative bias or learned
    positions at each new offset, the source bound) pick what a full pass picks, with the same attention rows."""
    from model.generate import generate

    decoder = open_stack(load_checkpoint(FIXTURES / name), "decoder", PAIRS["long"][0])
    ids = list(decoder.tokenizer.encode("Each key").ids)
    cached, full = generate(decoder.model, ids, 5), generate(decoder.model, ids, 5, use_cache=False)
    assert [s.token for s in cached] == [s.token for s in full]
    for a, b in zip(cached, full, strict=True):
        assert np.abs(a.rows - b.rows[..., : a.rows.shape[-1]]).max() <= 1e-5
    seq = ids + [s.token for s in cached[:-1]]
    with torch.inference_mode():
        logits = decoder.model.lm_logits(decoder.model(torch.tensor([seq])))[0]  # (T, V)
    assert logits[len(ids) - 1 :].argmax(-1).tolist() == [s.token for s in cached]


def test_a_long_text_of_a_relative_position_model_is_read_exactly_not_whole():
    """The whole-text reader keeps q and k only: it would leave T5's bias out of every pattern, so the pages read the
    first 512 tokens exactly and say so."""
    from model.observe import observe
    from model.whole import observe_long

    encoder = open_stack(load_checkpoint(FIXTURES / "t5"), "encoder")
    text = " ".join(["The animal didn't cross the street because it was too tired."] * 60)
    obs = observe(encoder.model, encoder.tokenizer, text)
    assert obs.truncated and obs.n_tokens == 512
    assert any("relative-position bias, which the whole-text reader does not carry" in n for n in obs.notices)
    with pytest.raises(ValueError, match="does not carry a relative-position bias"):
        observe_long(encoder.model, encoder.tokenizer, text)


def test_a_random_init_of_a_decoder_that_reads_a_source_reads_the_same_source():
    """The lessons' "random init of the same config" of T5's decoder: a fresh Transformer has no encoder output
    bound, so every pass raised; it now reads the source as the trained encoder gives it."""
    from model.io.catalog import ModelSpec, load, reinit_of
    from model.observe import observe
    from tests.hf_fixtures import FIXTURES

    base = load(ModelSpec("folder", path=str(FIXTURES.parent / "hf_encdec" / "t5")))
    fresh = reinit_of(base, seed=1)
    assert all(b.memory is a.memory for a, b in zip(base.model.blocks, fresh.model.blocks, strict=True))
    obs = observe(fresh.model, fresh.tokenizer, "the cat sat on the mat")
    assert obs.cross is not None and obs.cross.shape[-1] == base.model.blocks[0].memory.size(1)
    assert "as the trained encoder gives it" in fresh.info["source"]
    assert not torch.equal(fresh.model.blocks[0].attn.w_q.weight, base.model.blocks[0].attn.w_q.weight)
