"""Write a Hugging Face fixture folder (tests/fixtures/hf/<family>) as the GGUF file llama.cpp's converter makes
of it — its tensor names, the row order of W_q/W_k that its "llama" rope kernel expects, fused tensors where its
graph reads them fused, and the byte-level BPE vocabulary and merges — so the GGUF importer can be checked against
what transformers computed on the same weights."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import torch

from model.io.families.weights import read_weights

LAYER_NAMES = {
    "self_attn.q_proj": "attn_q",
    "self_attn.k_proj": "attn_k",
    "self_attn.v_proj": "attn_v",
    "self_attn.o_proj": "attn_output",
    "self_attn.q_norm": "attn_q_norm",
    "self_attn.k_norm": "attn_k_norm",
    "self_attn.qkv_proj": "attn_qkv",  # phi3, fused
    "mlp.gate_proj": "ffn_gate",
    "mlp.up_proj": "ffn_up",
    "mlp.gate_up_proj": "ffn_up",  # phi3: gate and up fused, gate first
    "mlp.down_proj": "ffn_down",
    "input_layernorm": "attn_norm",
    "post_attention_layernorm": "ffn_norm",
    "self_attn.sinks": "attn_sinks",  # gpt-oss
}
#: where llama.cpp's converter names a Hugging Face tensor differently for an architecture
ARCH_NAMES = {
    "gemma2": {
        "post_attention_layernorm": "post_attention_norm",
        "pre_feedforward_layernorm": "ffn_norm",
        "post_feedforward_layernorm": "post_ffw_norm",
    },
    "olmo2": {"post_attention_layernorm": "post_attention_norm", "post_feedforward_layernorm": "post_ffw_norm"},
    "gpt-oss": {"post_attention_layernorm": "post_attention_norm", "mlp.router": "ffn_gate_inp"},
    "qwen3moe": {"mlp.gate": "ffn_gate_inp"},
    "llama": {"block_sparse_moe.gate": "ffn_gate_inp"},  # Mixtral
}
#: one matrix per expert, as Mixtral and Qwen3-MoE store them: (part below experts.{e}., its GGUF name)
PER_EXPERT = {
    "llama": ("block_sparse_moe.experts", {"w1": "ffn_gate_exps", "w3": "ffn_up_exps", "w2": "ffn_down_exps"}),
    "qwen3moe": ("mlp.experts", {"gate_proj": "ffn_gate_exps", "up_proj": "ffn_up_exps", "down_proj": "ffn_down_exps"}),
}


def permute(w: torch.Tensor, n_heads: int) -> torch.Tensor:
    """llama.cpp's converter for "llama": inside each head, rows (i, i + d_k/2) become (2i, 2i+1)."""
    out, d_in = w.shape
    return w.reshape(n_heads, 2, out // n_heads // 2, d_in).transpose(1, 2).reshape(out, d_in)


def llama3_rope_factors(cfg: dict) -> torch.Tensor | None:
    """The ``rope_freqs`` tensor llama.cpp's converter writes for a "llama3" rope scaling (convert_hf_to_gguf.py's
    LlamaModel): per frequency 1 (short wavelengths), the factor (long ones) or the smoothed divisor between."""
    rope = cfg.get("rope_parameters") or cfg.get("rope_scaling") or {}
    if rope.get("rope_type") != "llama3":
        return None
    base = rope.get("rope_theta", cfg.get("rope_theta", 10000.0))
    dim = cfg.get("head_dim") or cfg["hidden_size"] // cfg["num_attention_heads"]
    freqs = 1.0 / (base ** (torch.arange(0, dim, 2, dtype=torch.float32) / dim))
    factor, low, high = rope["factor"], rope["low_freq_factor"], rope["high_freq_factor"]
    old = rope["original_max_position_embeddings"]
    out = []
    for freq in freqs.tolist():
        wavelen = 2 * math.pi / freq
        if wavelen < old / high:
            out.append(1.0)
        elif wavelen > old / low:
            out.append(factor)
        else:
            smooth = (old / wavelen - low) / (high - low)
            out.append(1 / ((1 - smooth) / factor + smooth))
    return torch.tensor(out, dtype=torch.float32)


def write(
    folder: Path, path: Path, arch: str, skip: tuple[str, ...] = (), keys: dict | None = None, mxfp4: bool = False
) -> Path:
    """The GGUF file of ``folder`` at ``path``; tensors whose GGUF name contains one of ``skip`` are left out (a
    broken file); ``keys``: more metadata (name below the architecture: value); ``mxfp4``: experts stored as MXFP4,
    as llama.cpp's converter stores gpt-oss's."""
    import gguf

    cfg = json.loads((folder / "config.json").read_text())
    tok = json.loads((folder / "tokenizer.json").read_text())
    vocab = sorted(tok["model"]["vocab"].items(), key=lambda kv: kv[1])
    tokens = [t for t, _ in vocab]
    merges = [m if isinstance(m, str) else " ".join(m) for m in tok["model"]["merges"]]
    special = {a["content"] for a in tok.get("added_tokens", []) if a.get("special")}
    heads, kv = cfg["num_attention_heads"], cfg.get("num_key_value_heads") or cfg["num_attention_heads"]
    w = gguf.GGUFWriter(str(path), arch)
    w.add_name(f"tiny {arch} from tests/fixtures/hf/{folder.name}")
    w.add_block_count(cfg["num_hidden_layers"])
    w.add_context_length(cfg["max_position_embeddings"])
    w.add_embedding_length(cfg["hidden_size"])
    w.add_feed_forward_length(cfg["intermediate_size"])
    w.add_head_count(heads)
    w.add_head_count_kv(kv)
    w.add_rope_freq_base(float((cfg.get("rope_parameters") or {}).get("rope_theta", 10000.0)))
    w.add_layer_norm_rms_eps(cfg["rms_norm_eps"])
    head_dim = cfg.get("head_dim") or cfg["hidden_size"] // heads
    w.add_rope_dimension_count(head_dim)
    w.add_key_length(head_dim)
    w.add_value_length(head_dim)
    if cfg.get("sliding_window") and arch in ("phi3", "gemma2", "gpt-oss"):
        w.add_sliding_window(cfg["sliding_window"])
    _arch_keys(w, arch, cfg, keys or {})
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre("default")
    w.add_token_list(tokens)
    w.add_token_merges(merges)
    w.add_token_types([3 if t in special else 1 for t in tokens])
    w.add_add_bos_token(False)
    hf = {k: v.float() for k, v in read_weights(folder).items()}
    if arch == "gemma2":  # llama.cpp stores Gemma's RMSNorm weights as 1 + w
        hf = {k: v + 1 if k.endswith("norm.weight") else v for k, v in hf.items()}
    names = {**LAYER_NAMES, **ARCH_NAMES.get(arch, {})}

    def put(name: str, t: torch.Tensor) -> None:
        if any(part in name for part in skip):
            return
        data = np.ascontiguousarray(t.numpy().astype(np.float32))
        if mxfp4 and "_exps.weight" in name:
            import gguf.quants

            packed = gguf.quants.quantize(data, gguf.GGMLQuantizationType.MXFP4)
            w.add_tensor(name, packed, raw_dtype=gguf.GGMLQuantizationType.MXFP4)
        else:
            w.add_tensor(name, data)

    put("token_embd.weight", hf["model.embed_tokens.weight"])
    factors = llama3_rope_factors(cfg)
    if factors is not None:  # Llama 3.x: llama.cpp writes its RoPE scaling as per-frequency divisors
        put("rope_freqs.weight", factors)
    put("output_norm.weight", hf["model.norm.weight"])
    if not cfg.get("tie_word_embeddings", False):
        put("output.weight", hf["lm_head.weight"])
    for i in range(cfg["num_hidden_layers"]):
        for src, dst in names.items():
            if f"model.layers.{i}.{src}" in hf:  # gpt-oss's sinks: a bare tensor
                put(f"blk.{i}.{dst}.weight", hf[f"model.layers.{i}.{src}"])
            for part in ("weight", "bias"):
                key = f"model.layers.{i}.{src}.{part}"
                if key not in hf:
                    continue
                t = hf[key]
                if arch in ("llama", "granite") and src in ("self_attn.q_proj", "self_attn.k_proj"):
                    t = permute(t if t.dim() == 2 else t[:, None], heads if src.endswith("q_proj") else kv)
                    t = t if key.endswith("weight") else t[:, 0]
                put(f"blk.{i}.{dst}.{part}", t)
        for name, t in _experts(hf, arch, i).items():
            put(f"blk.{i}.{name}", t)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path


def _experts(hf: dict, arch: str, i: int) -> dict[str, torch.Tensor]:
    """Layer ``i``'s experts as llama.cpp stores them: one tensor per projection, gate and up (E, f, d), down
    (E, d, f); gpt-oss's interleaved gate_up (E, d, 2f) split and transposed, with its biases."""
    if arch in PER_EXPERT:
        prefix, parts = PER_EXPERT[arch]
        out = {}
        for part, name in parts.items():
            found = [hf.get(f"model.layers.{i}.{prefix}.{e}.{part}.weight") for e in range(64)]
            found = [t for t in found if t is not None]
            if found:
                out[f"{name}.weight"] = torch.stack(found)
        return out
    key = f"model.layers.{i}.mlp.experts."
    if arch != "gpt-oss" or key + "gate_up_proj" not in hf:
        return {}
    gate_up, bias = hf[key + "gate_up_proj"], hf[key + "gate_up_proj_bias"]  # (E, d, 2f), (E, 2f)
    return {
        "ffn_gate_exps.weight": gate_up[..., ::2].transpose(1, 2),
        "ffn_up_exps.weight": gate_up[..., 1::2].transpose(1, 2),
        "ffn_down_exps.weight": hf[key + "down_proj"].transpose(1, 2),  # (E, d, f)
        "ffn_gate_exps.bias": bias[:, ::2],
        "ffn_up_exps.bias": bias[:, 1::2],
        "ffn_down_exps.bias": hf[key + "down_proj_bias"],
    }


def _arch_keys(w, arch: str, cfg: dict, keys: dict) -> None:
    """The metadata llama.cpp's converter writes for these architectures beyond LLaMA's."""
    experts = cfg.get("num_local_experts") or cfg.get("num_experts")
    if experts:
        w.add_expert_count(experts)
        w.add_expert_used_count(cfg["num_experts_per_tok"])
    if cfg.get("moe_intermediate_size"):
        w.add_expert_feed_forward_length(cfg["moe_intermediate_size"])
    if arch == "gpt-oss":
        w.add_expert_feed_forward_length(cfg["intermediate_size"])
        rope = cfg["rope_parameters"]
        w.add_rope_scaling_type(__import__("gguf").RopeScalingType.YARN)
        w.add_rope_scaling_factor(rope["factor"])
        w.add_rope_scaling_orig_ctx_len(rope["original_max_position_embeddings"])
    if arch == "granite":
        w.add_embedding_scale(cfg["embedding_multiplier"])
        w.add_residual_scale(cfg["residual_multiplier"])
        w.add_attention_scale(cfg["attention_multiplier"])
        w.add_logit_scale(cfg["logits_scaling"])
    if arch == "gemma2":
        w.add_attn_logit_softcapping(cfg["attn_logit_softcapping"])
        w.add_final_logit_softcapping(cfg["final_logit_softcapping"])
    for key, value in keys.items():
        (w.add_bool if isinstance(value, bool) else w.add_float32)(f"{arch}.{key}", value)
