"""A GGUF file's tensors written straight into the model, tensor by tensor, in slices of rows.

Dequantising every tensor to float32 first and then loading that state into a freshly initialised model held the
weights three times over: Gemma 3 270M (240 MB in Q4_K_M, 1.07 GB in float32) peaked at 3.4 GB. Here the model is
built without initialisation (model/io/state.empty_model) and each tensor is dequantised into its parameter a slice
of rows at a time, so the peak is the float32 model plus one slice; a tensor that must be reordered (llama.cpp's
W_q/W_k rows) or split (phi3's fused ones) passes through one temporary of its own size.

The commonest block types (Q8_0, Q4_0, Q4_1, Q5_0: all of SmolLM2, most of Gemma 3) are dequantised here, in place
and a whole slice at a time, with the gguf package's arithmetic (its values bit for bit); its own code, which works
16 rows at a time and returns a copy, took 1.8 of SmolLM2's 2.3 s load (now 0.4). The rest go through gguf.quants.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable

import numpy as np
import torch

from model.config import TransformerConfig
from model.errors import CheckpointError
from model.io.gguf_file import GGUFTensor
from model.io.state import all_finite, check_fit, empty_model
from model.memory import release_freed_memory
from model.transformer import Transformer

SLICE_BYTES = 2 * 2**20  # float32 bytes of output per dequantised slice

Release = Callable[[int, int], None]
Split = Callable[[str, torch.Tensor], dict[str, torch.Tensor]]


def dequantised(t: GGUFTensor, out: np.ndarray | None = None, release: Release | None = None) -> np.ndarray:
    """The float32 values of ``t`` in numpy's order (slowest axis first), written into ``out`` when given, in
    slices of the leading axis (a dequantised slice is a few MB, not the whole tensor); ``release(start, length)``
    is told each slice's bytes of the file once read."""
    import gguf

    shape = tuple(int(d) for d in reversed(t.shape))
    out = np.empty(shape, dtype=np.float32) if out is None else out
    rows = max(1, SLICE_BYTES // max(1, 4 * int(np.prod(shape[1:], dtype=np.int64))))
    fast = _FAST.get(t.tensor_type.name)
    block_bytes = gguf.GGML_QUANT_SIZES[t.tensor_type][1]
    try:
        for start in range(0, shape[0], rows):
            target = out[start : start + rows]
            if fast is not None and target.flags.c_contiguous:  # (blocks, bytes) -> (blocks, 32) float32 in place
                fast(t.data[start : start + rows].reshape(-1, block_bytes), target)
            else:
                part = gguf.quants.dequantize(t.data[start : start + rows], t.tensor_type)
                target[...] = np.asarray(part, dtype=np.float32).reshape(target.shape)
            first, last = start * t.n_bytes // shape[0], min(start + rows, shape[0]) * t.n_bytes // shape[0]
            if release is not None:
                release(t.data_offset + first, last - first)
    except Exception as exc:  # the gguf package raises ValueError, TypeError, IndexError on odd data
        raise CheckpointError(f"tensor {t.name!r} could not be dequantised: {exc}") from None
    return out


def _scales(blocks: np.ndarray, at: int) -> np.ndarray:
    """(B, 1) float32 of the float16 at byte ``at`` of each block."""
    return blocks[:, at : at + 2].view(np.float16).astype(np.float32)


def _q8_0(blocks: np.ndarray, out: np.ndarray) -> None:
    """Q8_0 blocks (B, 34): a float16 scale d, 32 int8 q; w = q · d."""
    np.multiply(blocks[:, 2:].view(np.int8), _scales(blocks, 0), out=out.reshape(-1, 32))


def _nibbles(qs: np.ndarray, out: np.ndarray) -> np.ndarray:
    """(B, 16) bytes -> (B, 32): each block's low nibbles, then its high ones (ggml's order)."""
    np.bitwise_and(qs, 0x0F, out=out[:, :16])
    np.right_shift(qs, 4, out=out[:, 16:])
    return out


def _q4_0(blocks: np.ndarray, out: np.ndarray) -> None:
    """Q4_0 blocks (B, 18): d, then 16 bytes of 4-bit q; w = d · (q − 8)."""
    q = _nibbles(blocks[:, 2:], np.empty((len(blocks), 32), np.uint8)).view(np.int8) - np.int8(8)
    np.multiply(_scales(blocks, 0), q, out=out.reshape(-1, 32))


def _q4_1(blocks: np.ndarray, out: np.ndarray) -> None:
    """Q4_1 blocks (B, 20): d, m, then 16 bytes of 4-bit q; w = d · q + m."""
    flat = out.reshape(-1, 32)
    np.multiply(_scales(blocks, 0), _nibbles(blocks[:, 4:], np.empty((len(blocks), 32), np.uint8)), out=flat)
    np.add(flat, _scales(blocks, 2), out=flat)


def _q5_0(blocks: np.ndarray, out: np.ndarray) -> None:
    """Q5_0 blocks (B, 22): d, 32 fifth bits (a little-endian uint32), 16 bytes of low 4 bits; w = d · (q − 16)."""
    high = (blocks[:, 2:6].view("<u4") >> np.arange(32, dtype=np.uint32)) & np.uint32(1)  # (B, 32)
    q = _nibbles(blocks[:, 6:], np.empty((len(blocks), 32), np.uint8)) | (high.astype(np.uint8) << np.uint8(4))
    np.multiply(_scales(blocks, 0), q.view(np.int8) - np.int8(16), out=out.reshape(-1, 32))


#: the block types written here in place, as the gguf package computes them (tests/model/test_gguf_reader.py
#: compares every value's bits: random blocks of each type, and tensors of each type in SmolLM2 and Gemma 3); the
#: rest go through gguf.quants
_FAST = {"Q8_0": _q8_0, "Q4_0": _q4_0, "Q4_1": _q4_1, "Q5_0": _q5_0}


def fill_model(
    cfg: TransformerConfig,
    plan: list[tuple[GGUFTensor, str]],
    reorder: Callable[[str], bool],
    split: Split,
    release: Release | None = None,
) -> tuple[Transformer, list[str]]:
    """Build ``cfg``'s model from ``plan`` (each GGUF tensor with our key). ``reorder(key)``: the tensor's rows
    are reordered (it goes through a temporary); ``split(key, tensor)``: our keys and tensors it becomes (most
    tensors: itself); ``release(start, length)``: told each slice of the file once read. Every key and shape is
    checked before a byte is dequantised. Returns the model (eval mode) and the notes on NaN or Inf weights."""
    model = empty_model(cfg)
    release_freed_memory()  # what computing its position tables freed
    params = model.state_dict()  # tensors sharing the parameters' storage
    found, direct = {}, {}
    for t, key in plan:
        shape = tuple(int(d) for d in reversed(t.shape))
        parts = split(key, torch.empty(shape, device="meta"))  # shapes only
        found.update({k: tuple(v.shape) for k, v in parts.items()})
        direct[t.name] = list(parts) == [key] and not reorder(key)
    check_fit({k: tuple(v.shape) for k, v in params.items()}, found)
    notes = []
    for t, key in plan:
        if direct[t.name]:  # dequantised straight into the parameter
            dequantised(t, params[key].numpy(), release)
            written = {key: params[key]}
        else:
            written = split(key, torch.from_numpy(dequantised(t, release=release)))
            for k, v in written.items():
                params[k].copy_(v)
        notes += [f"{k} contains NaN or Inf values; outputs will not be meaningful" for k in written
                  if not all_finite(params[k])]  # fmt: skip
    for note in notes:
        warnings.warn(note, stacklevel=2)
    return model.eval(), notes
