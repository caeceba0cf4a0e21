"""A tiny valid LLaMA GGUF written with the gguf package, and broken variants of it, made on the fly."""

from __future__ import annotations

import struct
from pathlib import Path

import numpy as np

from model.io.tokenizer import _bytes_to_unicode

D, HEADS, KV, FF, LAYERS = 32, 4, 2, 64, 2


def _vocab() -> tuple[list[str], list[str], list[int]]:
    chars = list(_bytes_to_unicode().values())
    merges = ["Ġ t", "h e", "Ġt he"]
    tokens = ["<|endoftext|>", *chars, "Ġt", "he", "Ġthe"]
    types = [3] + [1] * (len(tokens) - 1)
    return tokens, merges, types


def write_tiny_gguf(
    path: Path, *, arch: str = "llama", quant: str = "F32", seed: int = 0, untied: bool = False, context: int = 64
) -> Path:
    """A 2-layer LLaMA (d_model 32, 4 query heads sharing 2 K/V heads) with random weights, reading ``context``
    tokens."""
    import gguf

    tokens, merges, types = _vocab()
    rng = np.random.default_rng(seed)
    w = gguf.GGUFWriter(str(path), arch)
    w.add_name("tiny llama")
    w.add_block_count(LAYERS)
    w.add_context_length(context)
    w.add_embedding_length(D)
    w.add_feed_forward_length(FF)
    w.add_head_count(HEADS)
    w.add_head_count_kv(KV)
    w.add_rope_freq_base(10000.0)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_rope_dimension_count(D // HEADS)
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre("smollm")
    w.add_token_list(tokens)
    w.add_token_merges(merges)
    w.add_token_types(types)
    w.add_add_bos_token(False)

    def tensor(name: str, *shape: int) -> None:
        arr = rng.normal(0, 0.3, shape).astype(np.float32)
        if quant == "Q8_0" and arr.ndim == 2:
            q8 = gguf.GGMLQuantizationType.Q8_0
            w.add_tensor(name, gguf.quants.quantize(arr, q8), raw_dtype=q8)
        else:
            w.add_tensor(name, arr if arr.ndim == 2 else 1 + arr)

    tensor("token_embd.weight", len(tokens), D)
    for i in range(LAYERS):
        tensor(f"blk.{i}.attn_norm.weight", D)
        tensor(f"blk.{i}.attn_q.weight", D, D)
        tensor(f"blk.{i}.attn_k.weight", KV * D // HEADS, D)
        tensor(f"blk.{i}.attn_v.weight", KV * D // HEADS, D)
        tensor(f"blk.{i}.attn_output.weight", D, D)
        tensor(f"blk.{i}.ffn_norm.weight", D)
        tensor(f"blk.{i}.ffn_gate.weight", FF, D)
        tensor(f"blk.{i}.ffn_up.weight", FF, D)
        tensor(f"blk.{i}.ffn_down.weight", D, FF)
    tensor("output_norm.weight", D)
    if untied:
        tensor("output.weight", len(tokens), D)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path


def _from_hf(path: Path, family: str, skip: tuple[str, ...]) -> Path:
    from tests.hf_fixtures import FIXTURES
    from tests.model.gguf_from_hf import write

    return write(FIXTURES / family, path, family, skip=skip)


def broken_gguf_files(tmp: Path) -> dict[str, tuple[str, bytes, str]]:
    """name -> (file name, bytes, expected message fragment)."""
    good = write_tiny_gguf(tmp / "tiny_good.gguf").read_bytes()
    files = {
        "GGUF: truncated": ("cut.gguf", good[: len(good) - 700], "truncated"),
        "GGUF: empty": ("empty.gguf", b"", "not a GGUF file"),
        "GGUF: random bytes": ("noise.gguf", bytes(range(256)) * 16, "not a GGUF file"),
        "GGUF: absurd counts": (
            "counts.gguf",
            b"GGUF" + struct.pack("<IQQ", 3, 10**12, 10**12) + good[24:],
            "not believable",
        ),
        "GGUF: unknown version": ("version.gguf", b"GGUF" + struct.pack("<I", 99) + good[8:], "version 99"),
        "GGUF: damaged metadata": ("meta.gguf", good[:24] + b"\xff" * 64 + good[88:], "damaged"),
        "GGUF: unsupported architecture": (
            "falcon.gguf",
            write_tiny_gguf(tmp / "falcon.gguf", arch="falcon").read_bytes(),
            "architecture 'falcon' is not supported",
        ),
        "GGUF: a qwen3 file without its QK-norm": (
            "qwen3.gguf",
            _from_hf(tmp / "qwen3_broken.gguf", "qwen3", skip=("attn_q_norm",)).read_bytes(),
            "missing keys: blocks.0.attn.q_norm.weight",
        ),
        "GGUF: a gemma3 file without its sandwich norms and QK-norm": (
            "gemma.gguf",
            write_tiny_gguf(tmp / "gemma.gguf", arch="gemma3").read_bytes(),
            "missing keys: blocks.0.attn.k_norm.weight",
        ),
    }
    # a tensor that claims to lie beyond the end of the file: patch the last tensor's offset in the header
    lying = bytearray(good)
    name = b"output_norm.weight"
    at = bytes(lying).rindex(name) + len(name)
    n_dims = struct.unpack_from("<I", lying, at)[0]
    offset_at = at + 4 + 8 * n_dims + 4
    struct.pack_into("<Q", lying, offset_at, 10**9)
    files["GGUF: tensor offset past the end"] = ("lies.gguf", bytes(lying), "truncated")
    # a quantisation this importer does not read: the last tensor's type field says IQ4_NL
    odd = bytearray(good)
    struct.pack_into("<I", odd, at + 4 + 8 * n_dims, 20)  # GGMLQuantizationType.IQ4_NL
    files["GGUF: unsupported quantisation"] = ("iq4.gguf", bytes(odd), "which this importer does not read")
    return files
