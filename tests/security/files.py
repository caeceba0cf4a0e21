"""Broken and malicious checkpoint files, made on the fly from a small valid model."""

from __future__ import annotations

import io
import json
import struct
from pathlib import Path

import torch
from safetensors.torch import save as st_save

from model.config import TransformerConfig
from model.io.catalog import BUNDLED_TOKENIZER
from model.io.checkpoint import FORMAT, to_bytes
from model.io.tokenizer import Tokenizer
from model.transformer import Transformer
from tests.security.gguf_files import broken_gguf_files

MARKER_NAME = "attention_lab_pwned"


def _model() -> tuple[Transformer, Tokenizer]:
    tok = Tokenizer.from_file(BUNDLED_TOKENIZER)
    torch.manual_seed(0)
    cfg = TransformerConfig(vocab_size=tok.vocab_size, d_model=32, n_heads=4, n_layers=1, d_ff=64, max_seq_len=64)
    return Transformer(cfg).eval(), tok


def _meta(cfg: TransformerConfig | dict, tok: Tokenizer | None = None) -> dict[str, str]:
    meta = {"format": FORMAT, "config": json.dumps(cfg if isinstance(cfg, dict) else cfg.to_dict())}
    if tok is not None:
        meta["tokenizer"] = tok.to_str()
    return meta


class Evil:
    """Pickles to a call that would create a marker file if anything unpickled it."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):
        return (open, (str(self.marker), "w"))


def broken_files(tmp: Path) -> dict[str, tuple[str, bytes, str | None]]:
    """name -> (file name, bytes, expected message fragment; None = loads with a warning)."""
    model, tok = _model()
    good = to_bytes(model, tok)
    state = {k: v.clone() for k, v in model.state_dict().items()}
    files: dict[str, tuple[str, bytes, str | None]] = {}

    buf = io.BytesIO()
    torch.save({"config": model.cfg.to_dict(), "state_dict": state, "payload": Evil(tmp / MARKER_NAME)}, buf)
    files["pickle that runs code"] = (
        "evil.pt",
        buf.getvalue(),
        "never unpickled here, because unpickling can run code",
    )
    files["truncated safetensors"] = ("trunc.safetensors", good[: len(good) * 2 // 3], "truncated")
    header = json.dumps(
        {
            "__metadata__": _meta(model.cfg, tok),
            "tok_emb.weight": {"dtype": "F32", "shape": [8192, 32], "data_offsets": [0, 10**9]},
        }
    ).encode()
    files["header lies about sizes"] = (
        "lies.safetensors",
        struct.pack("<Q", len(header)) + header + b"\0" * 128,
        "header lies",
    )
    wrong = dict(state, **{"blocks.0.ff.fc1.weight": torch.zeros(65, 32)})
    files["wrong shapes"] = ("shape.safetensors", st_save(wrong, metadata=_meta(model.cfg, tok)), "expected shape")
    missing = {k: v for k, v in state.items() if k != "blocks.0.ln2.weight"}
    files["missing key"] = ("missing.safetensors", st_save(missing, metadata=_meta(model.cfg, tok)), "missing keys")
    extra = dict(state, surprise=torch.zeros(3))
    files["extra key"] = ("extra.safetensors", st_save(extra, metadata=_meta(model.cfg, tok)), "unexpected keys")
    nan = {k: v.clone() for k, v in state.items()}
    nan["blocks.0.ff.fc1.weight"][0, 0] = float("nan")
    nan["blocks.0.ff.fc2.weight"][0, 0] = float("inf")
    files["NaN and Inf weights"] = ("nan.safetensors", st_save(nan, metadata=_meta(model.cfg, tok)), None)
    small_cfg = model.cfg.replace(vocab_size=100)
    small = Transformer(small_cfg)
    files["tokenizer does not fit"] = ("vocab.safetensors", to_bytes(small, tok), "embedding table has only 100")
    bad_types = dict(model.cfg.to_dict(), n_layers="one")
    files["config with wrong types"] = (
        "types.safetensors",
        st_save(state, metadata=_meta(bad_types, tok)),
        "must be an integer",
    )
    absurd = dict(model.cfg.to_dict(), d_model=65536, d_ff=262144, n_layers=96)
    files["absurd sizes"] = ("absurd.safetensors", st_save(state, metadata=_meta(absurd, tok)), "above the limit")
    files["empty file"] = ("empty.safetensors", b"", "empty or too short")
    files["random binary"] = (
        "random.safetensors",
        bytes(torch.randint(0, 256, (4096,), dtype=torch.uint8).tolist()),
        "not a safetensors",
    )
    files["bare pickle .pt"] = ("random.pt", b"\x80\x04garbage" * 100, "bare pickle, not a file written by torch.save")
    files["random bytes .pt"] = ("noise.pt", bytes(range(1, 256)) * 8, "not a PyTorch file")
    whole = _torch_bytes({"config": model.cfg.to_dict(), "state_dict": state})
    files["truncated .pt"] = ("cut.pt", whole[: len(whole) // 2], "damaged or cut short")
    files["bare state dict .pt"] = ("bare.pt", _torch_bytes(state), "must be a dict")
    files["plain safetensors, no config"] = ("plain.safetensors", st_save(state), "no Attention Lab config")
    files.update(broken_gguf_files(tmp))
    return files


def _torch_bytes(obj) -> bytes:
    buf = io.BytesIO()
    torch.save(obj, buf)
    return buf.getvalue()
