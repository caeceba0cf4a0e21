"""A GGUF file's tensors written straight into the model, tensor by tensor, in slices of rows.

Dequantising every tensor to float32 first and then loading that state into a freshly initialised model held the
weights three times over: Gemma 3 270M (240 MB in Q4_K_M, 1.07 GB in float32) peaked at 3.4 GB. Here the model is
built without initialisation (model/io/state.empty_model) and each tensor is dequantised into its parameter a slice
of rows at a time, so the peak is the float32 model plus one slice; a tensor that must be reordered (llama.cpp's
W_q/W_k rows) or split (phi3's fused ones) passes through one temporary of its own size.
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
    try:
        for start in range(0, shape[0], rows):
            part = gguf.quants.dequantize(t.data[start : start + rows], t.tensor_type)
            out[start : start + rows] = np.asarray(part, dtype=np.float32).reshape(out[start : start + rows].shape)
            first, last = start * t.n_bytes // shape[0], min(start + rows, shape[0]) * t.n_bytes // shape[0]
            if release is not None:
                release(t.data_offset + first, last - first)
    except Exception as exc:  # the gguf package raises ValueError, TypeError, IndexError on odd data
        raise CheckpointError(f"tensor {t.name!r} could not be dequantised: {exc}") from None
    return out


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
