"""Weight formats Attention Lab does not read are named as what they are, with what to do instead — never misread as
a safetensors header or listed by their wrapper's keys."""

from __future__ import annotations

import io
import json
import re
import struct

import pytest
import torch

from model.errors import CheckpointError
from model.io.checkpoint import load_bytes, load_checkpoint
from tests.hf_fixtures import FIXTURES as HF


def _pt(obj) -> bytes:
    buf = io.BytesIO()
    torch.save(obj, buf)
    return buf.getvalue()


CASES = {
    "model.onnx": (b"\x08\x07\x12\x07pytorch\x1a\x032.1" + bytes(64), "an ONNX file"),
    "graph.bin.onnx": (bytes(64), "an ONNX file"),
    "tf_model.h5": (b"\x89HDF\r\n\x1a\n" + bytes(64), "TensorFlow/Keras HDF5 file"),
    "weights.hdf5": (bytes(64), "TensorFlow/Keras HDF5 file"),
    "model.keras": (b"PK\x03\x04" + bytes(64), "Keras model file"),
    "flax_model.msgpack": (bytes(64), "Flax checkpoint"),
    "model.bin": (struct.pack("<I", 6) + b"\x10\x00TransformerSpec\x00" + bytes(64), "CTranslate2 model.bin"),
    "model.safetensors": (b"GGUF\x03\x00\x00\x00" + bytes(64), "give it the .gguf extension"),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_a_foreign_file_is_named_as_what_it_is(name):
    data, said = CASES[name]
    with pytest.raises(CheckpointError, match=re.escape(said)):
        load_bytes(data, name)


def test_nanochat_and_nested_state_dicts_name_what_they_hold():
    t = torch.zeros(2, 2)
    nanochat = {"transformer.wte.weight": t, "transformer.h.0.attn.c_q.weight": t, "lm_head.weight": t}
    with pytest.raises(CheckpointError, match="nanochat checkpoint"):
        load_bytes(_pt(nanochat), "model_000650.pt")
    nested = {"model_state_dict": {"encoder.mystery.weight": t, "encoder.other.bias": t}, "epoch": 3}
    with pytest.raises(CheckpointError, match=r"Found: encoder\.mystery\.weight, encoder\.other\.bias") as err:
        load_bytes(_pt(nested), "checkpoint.pt")
    assert "Found: encoder.mystery.weight, encoder.other.bias." in str(err.value)  # the inner names, not 'epoch'


def test_random_bytes_are_not_read_as_a_header_size():
    with pytest.raises(CheckpointError, match="not a safetensors checkpoint") as err:
        load_bytes(b"\xff" * 64, "weights.safetensors")
    assert not re.search(r"\d{1,3}(,\d{3}){3,}", str(err.value))  # no made-up byte count


def test_folders_in_foreign_formats(tmp_path):
    hf = tmp_path / "tf"
    hf.mkdir()
    (hf / "config.json").write_text((HF / "bert" / "config.json").read_text())
    (hf / "tf_model.h5").write_bytes(b"\x89HDF\r\n\x1a\n")
    with pytest.raises(CheckpointError, match="from_tf=True"):
        load_checkpoint(hf)
    ct2 = tmp_path / "ct2"
    ct2.mkdir()
    (ct2 / "config.json").write_text(json.dumps({"layer_norm_epsilon": 1e-5}))
    (ct2 / "shared_vocabulary.json").write_text("[]")
    (ct2 / "model.bin").write_bytes(struct.pack("<I", 6) + b"\x10\x00TransformerSpec\x00")
    with pytest.raises(CheckpointError, match="CTranslate2"):
        load_checkpoint(ct2)
