import io
import json
import struct
from pathlib import Path

import pytest
import torch
from safetensors.torch import save as st_save

from model.config import TransformerConfig
from model.errors import CheckpointError
from model.io.catalog import BUNDLED_TOKENIZER
from model.io.checkpoint import load_bytes, load_checkpoint, save_checkpoint, to_bytes
from model.io.tokenizer import Tokenizer
from model.positional import SINUSOIDAL_MIN_LEN
from model.transformer import Transformer


@pytest.fixture(scope="module")
def tok():
    return Tokenizer.from_file(BUNDLED_TOKENIZER)


@pytest.fixture
def small(tok):
    torch.manual_seed(0)
    cfg = TransformerConfig(
        vocab_size=tok.vocab_size,
        d_model=32,
        n_heads=4,
        n_layers=2,
        d_ff=64,
        max_seq_len=64,
        mlm_head=True,
        dropout=0.0,
    )
    return Transformer(cfg).eval()


def test_round_trip_file_and_folder(tmp_path, small, tok):
    ids = torch.tensor([tok.encode("in the beginning was the word").ids])
    path = save_checkpoint(tmp_path / "m.safetensors", small, tok, {"note": "hi"})
    loaded = load_checkpoint(path)
    assert loaded.info == {"note": "hi"} and loaded.tokenizer.vocab_size == tok.vocab_size
    with torch.inference_mode():
        assert torch.equal(small(ids), loaded.model(ids))
        assert torch.equal(small.mlm_logits(small(ids)), loaded.model.mlm_logits(loaded.model(ids)))
    folder = tmp_path / "folder"
    folder.mkdir()
    from safetensors.torch import save_file

    save_file({k: v.contiguous() for k, v in small.state_dict().items()}, str(folder / "model.safetensors"))
    (folder / "config.json").write_text(small.cfg.to_json())
    (folder / "tokenizer.json").write_text(tok.to_str())
    again = load_checkpoint(folder)
    with torch.inference_mode():
        assert torch.equal(small(ids), again.model(ids))


def test_pt_accepted_only_as_plain_data(tmp_path, small):
    buf = io.BytesIO()
    torch.save({"config": small.cfg.to_dict(), "state_dict": small.state_dict()}, buf)
    loaded = load_bytes(buf.getvalue(), "model.pt")
    # a sinusoidal table is computed, not stored: the loaded model reads up to SINUSOIDAL_MIN_LEN tokens
    assert small.cfg.positional == "sinusoidal" and small.cfg.max_seq_len < SINUSOIDAL_MIN_LEN
    assert loaded.model.cfg == small.cfg.replace(max_seq_len=SINUSOIDAL_MIN_LEN)


def test_malicious_pickle_is_not_executed(tmp_path):
    marker = tmp_path / "pwned"

    class Evil:
        def __reduce__(self):
            return (open, (str(marker), "w"))

    buf = io.BytesIO()
    torch.save({"config": {}, "state_dict": {}, "x": Evil()}, buf)
    with pytest.raises(CheckpointError, match="never unpickled"):
        load_bytes(buf.getvalue(), "evil.pt")
    assert not marker.exists()


def test_missing_unexpected_and_shape_errors(small):
    state = dict(small.state_dict())
    state.pop("blocks.0.attn.w_q.weight")
    state["blocks.0.extra"] = torch.zeros(1)
    state["tok_emb.weight"] = torch.zeros(10, 32)
    data = st_save(state, metadata={"format": "attention-lab/1", "config": small.cfg.to_json()})
    with pytest.raises(CheckpointError) as err:
        load_bytes(data, "m.safetensors")
    msg = str(err.value)
    assert "missing keys: blocks.0.attn.w_q.weight" in msg
    assert "unexpected keys: blocks.0.extra" in msg
    assert f"tok_emb.weight: expected shape ({small.cfg.vocab_size}, 32), found (10, 32)" in msg


def test_truncated_empty_random_and_lying_files(small, tok):
    good = to_bytes(small, tok)
    with pytest.raises(CheckpointError, match="truncated"):
        load_bytes(good[: len(good) // 2], "m.safetensors")
    with pytest.raises(CheckpointError, match="empty or too short"):
        load_bytes(b"", "m.safetensors")
    with pytest.raises(CheckpointError, match="not a safetensors"):
        load_bytes(bytes(range(256)) * 40, "m.safetensors")
    # a header that claims a tensor is bigger than the bytes that follow
    header = {"w": {"dtype": "F32", "shape": [1000, 1000], "data_offsets": [0, 4_000_000]}}
    raw = json.dumps(header).encode()
    with pytest.raises(CheckpointError, match="header lies"):
        load_bytes(struct.pack("<Q", len(raw)) + raw + b"\0" * 64, "m.safetensors")
    with pytest.raises(CheckpointError, match="file is empty"):
        load_bytes(b"", "m.pt")


def test_invalid_and_absurd_configs_refused_before_allocation(small):
    state = small.state_dict()
    absurd = dict(small.cfg.to_dict(), vocab_size=10**9, d_model=8192)
    for cfg, message in [
        (absurd, "parameters"),
        (dict(small.cfg.to_dict(), n_heads="4"), "integer"),
        ({"nonsense": 1}, "unknown config keys"),
    ]:
        data = st_save(state, metadata={"format": "attention-lab/1", "config": json.dumps(cfg)})
        with pytest.raises(CheckpointError, match=message):
            load_bytes(data, "m.safetensors")


def test_nan_weights_load_with_a_warning(small):
    state = {k: v.clone() for k, v in small.state_dict().items()}
    state["blocks.0.ln1.weight"][0] = float("nan")
    data = st_save(state, metadata={"format": "attention-lab/1", "config": small.cfg.to_json()})
    with pytest.warns(UserWarning, match="NaN or Inf"):
        loaded = load_bytes(data, "m.safetensors")
    assert loaded.warnings


def test_tokenizer_that_does_not_fit_is_refused(tok):
    cfg = TransformerConfig(vocab_size=100, d_model=32, n_heads=4, n_layers=1, d_ff=64)
    data = to_bytes(Transformer(cfg), tok)
    with pytest.raises(CheckpointError, match="embedding table has only 100 rows"):
        load_bytes(data, "m.safetensors")


def test_plain_safetensors_without_config_is_explained(small):
    data = st_save(dict(small.state_dict()))
    with pytest.raises(CheckpointError, match="no Attention Lab config"):
        load_bytes(data, "m.safetensors")
    with pytest.raises(CheckpointError, match="no such file"):
        load_checkpoint(Path("/nonexistent/model.safetensors"))
