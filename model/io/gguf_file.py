"""A GGUF file's metadata and tensor table, parsed with struct and numpy (nothing in the file is executed).

The gguf package's own reader builds a numpy view for every element of every metadata array: 17 s for Gemma 3's
262,144-token vocabulary on 2 cores. This one reads the same layout (llama.cpp's docs/gguf.md: header, key/value
entries, tensor infos, aligned data) in well under a second, every length and offset checked against the file, and
hands the tensors' bytes over as views of one read-only memory map. The gguf package still names the quantisation
types and dequantises those model/io/gguf_weights.py does not.
"""

from __future__ import annotations

import mmap
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from model.errors import CheckpointError

# GGUF value types -> struct format (the scalars); 8 is a string, 9 an array
_SCALARS = {0: "B", 1: "b", 2: "H", 3: "h", 4: "I", 5: "i", 6: "f", 7: "?", 10: "Q", 11: "q", 12: "d"}
_NUMPY = {0: np.uint8, 1: np.int8, 2: np.uint16, 3: np.int16, 4: np.uint32, 5: np.int32, 6: np.float32,
          7: np.bool_, 10: np.uint64, 11: np.int64, 12: np.float64}  # fmt: skip
_STRING, _ARRAY = 8, 9
# tensor types stored as plain numpy items (the rest are blocks of bytes that gguf.quants dequantises)
_PLAIN = {"F32": np.float32, "F16": np.float16, "F64": np.float64, "I8": np.int8, "I16": np.int16,
          "I32": np.int32, "I64": np.int64}  # fmt: skip
MAX_DIMS = 4


class _DamagedError(Exception):
    """The bytes do not follow the GGUF layout (reported as a CheckpointError by :func:`read_gguf`)."""


@dataclass(frozen=True)
class GGUFTensor:
    """One tensor's entry: ``shape`` lists the fastest axis first (GGUF's order); ``data`` is a view of the file:
    plain types as (…, ne0) items, quantised ones as (…, bytes per row) uint8, as the gguf package lays them out."""

    name: str
    tensor_type: Any  # gguf.GGMLQuantizationType
    shape: tuple[int, ...]
    n_elements: int
    n_bytes: int
    data_offset: int
    data: np.ndarray


@dataclass
class GGUFFile:
    """``fields``: every metadata entry as plain Python values (strings decoded, arrays as lists)."""

    fields: dict[str, Any]
    tensors: list[GGUFTensor]
    version: int
    mapped: mmap.mmap | None = None

    def release(self, start: int, length: int) -> None:
        """Let the kernel drop the file's pages up to the end of these bytes from this process's memory (read again
        from the page cache or the disk if touched again): the file's bytes need not stay resident beside the
        weights made from them. From the file's start, not from ``start``: a kernel that maps a whole large folio
        on a fault maps the pages of the slice before too when the next slice is read (on Linux 6.18, slices of
        557 kB left 124 of Gemma 3's 170 MiB embedding mapped); dropping what is already unmapped costs nothing."""
        if self.mapped is not None and hasattr(mmap, "MADV_DONTNEED"):
            self.mapped.madvise(mmap.MADV_DONTNEED, 0, min(start + length, len(self.mapped)))


class _Cursor:
    def __init__(self, buf: memoryview) -> None:
        self.buf, self.pos = buf, 0

    def take(self, fmt: str) -> Any:
        size = struct.calcsize("<" + fmt)
        if self.pos + size > len(self.buf):
            raise _DamagedError("it ends inside its metadata")
        value = struct.unpack_from("<" + fmt, self.buf, self.pos)[0]
        self.pos += size
        return value

    def string(self) -> str:
        n = self.take("Q")
        if self.pos + n > len(self.buf):
            raise _DamagedError("a string runs past the end of the file")
        raw = bytes(self.buf[self.pos : self.pos + n])
        self.pos += n
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError:
            raise _DamagedError("a string is not UTF-8") from None

    def value(self, kind: int, depth: int = 0) -> Any:
        if kind in _SCALARS:
            return self.take(_SCALARS[kind])
        if kind == _STRING:
            return self.string()
        if kind != _ARRAY or depth > 2:
            raise _DamagedError(f"unknown value type {kind}")
        item, n = self.take("I"), self.take("Q")
        if item in _NUMPY:  # numbers: one numpy read of the whole array
            size = np.dtype(_NUMPY[item]).itemsize * n
            if self.pos + size > len(self.buf):
                raise _DamagedError("an array runs past the end of the file")
            values = np.frombuffer(self.buf, dtype=np.dtype(_NUMPY[item]).newbyteorder("<"), count=n, offset=self.pos)
            self.pos += size
            return values.tolist()
        if n > len(self.buf) - self.pos:  # every element takes at least a byte
            raise _DamagedError("an array claims more elements than the file holds")
        return [self.value(item, depth + 1) for _ in range(n)]


def read_gguf(path: Path, max_count: int) -> GGUFFile:
    """Parse ``path`` (a GGUF v2 or v3 file). Raises CheckpointError on anything that does not add up."""
    import gguf

    with path.open("rb") as fh:
        mapped = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)  # read-only: the array views cannot write
    try:
        parsed = _parse(np.frombuffer(mapped, dtype=np.uint8), max_count, gguf)
        parsed.mapped = mapped
        return parsed
    except (_DamagedError, struct.error, ValueError, OverflowError) as exc:
        raise CheckpointError(f"the GGUF file is damaged or truncated ({exc})") from None


def _parse(data: np.ndarray, max_count: int, gguf) -> GGUFFile:
    cur = _Cursor(memoryview(data))
    if cur.take("4s") != b"GGUF":
        raise _DamagedError("no GGUF magic bytes")
    version, n_tensors, n_kv = cur.take("I"), cur.take("Q"), cur.take("Q")
    if n_tensors > max_count or n_kv > max_count:
        raise _DamagedError(f"{n_tensors:,} tensors and {n_kv:,} entries")
    fields: dict[str, Any] = {}
    for _ in range(n_kv):
        key = cur.string()
        if key in fields:
            raise _DamagedError(f"the entry {key!r} appears twice")
        fields[key] = cur.value(cur.take("I"))
    infos = []
    for _ in range(n_tensors):
        name, n_dims = cur.string(), cur.take("I")
        if not 1 <= n_dims <= MAX_DIMS:
            raise _DamagedError(f"tensor {name!r} has {n_dims} dimensions")
        dims = tuple(cur.take("Q") for _ in range(n_dims))
        infos.append((name, dims, cur.take("I"), cur.take("Q")))
    alignment = fields.get("general.alignment", 32)
    if not isinstance(alignment, int) or alignment <= 0 or alignment & (alignment - 1):
        raise _DamagedError(f"alignment {alignment!r} is not a power of two")
    start = -(-cur.pos // alignment) * alignment
    tensors, names = [], set()
    for name, dims, raw_type, offset in infos:
        if name in names:
            raise _DamagedError(f"the tensor {name!r} appears twice")
        names.add(name)
        qtype = gguf.GGMLQuantizationType(raw_type)  # ValueError: an unknown type
        block, type_size = gguf.GGML_QUANT_SIZES[qtype]
        n = int(np.prod(dims, dtype=object))
        if n % block or (dims[0] % block):
            raise _DamagedError(f"tensor {name!r}: its shape {list(dims)} does not fill whole blocks of {block}")
        n_bytes = n // block * type_size
        begin = start + offset
        if begin + n_bytes > len(data):
            raise CheckpointError(f"the GGUF file is truncated: tensor {name!r} ends past the end of the file")
        shape = tuple(reversed(dims))  # numpy's order: slowest axis first
        raw = data[begin : begin + n_bytes]
        if qtype.name in _PLAIN:
            view = raw.view(np.dtype(_PLAIN[qtype.name]).newbyteorder("<")).reshape(shape)
        else:
            view = raw.reshape(*shape[:-1], shape[-1] // block * type_size)  # (…, bytes per row)
        tensors.append(GGUFTensor(name, qtype, dims, n, n_bytes, begin, view))
    return GGUFFile(fields, tensors, version)
