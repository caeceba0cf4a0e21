"""What each GGUF architecture adds to the LLaMA layout the importer starts from (:mod:`model.io.gguf`): Gemma 3's
and Gemma 2's config, Granite's multipliers, OLMo 2's norms, experts (Mixtral in "llama", Qwen3-MoE, gpt-oss) and
gpt-oss's sinks, RoPE scaling, Phi-3's fused tensors split, and the family line the sidebar shows. Where llama.cpp
fixes a value in its code rather than the file (Gemma 2's attention scale, gpt-oss's SwiGLU limit and its
alternating windows), we use llama.cpp's value: the file is read as llama.cpp runs it."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import torch

from model.config import TransformerConfig
from model.errors import CheckpointError

GEMMA_SWA_PATTERN = 6  # llama.cpp's Gemma 3: every 6th layer global, the others a sliding window


def gemma3_fields(d_model: int, n_heads: int, d_k: int, n_layers: int, window: int) -> dict[str, Any]:
    """What a gemma3 GGUF implies beyond LLaMA, as llama.cpp runs it: sandwich norms (stored as 1 + w, so no
    offset here), QK-norm, GeGLU, embeddings × √d_model, 1/√d_k attention (the 27B: 1/√(d_model / H)), sliding
    layers but every sixth, with RoPE base 10,000 on them."""
    scale = (d_model / n_heads if n_layers == 62 else d_k) ** -0.5
    pattern = tuple("global" if (i + 1) % GEMMA_SWA_PATTERN == 0 else "sliding" for i in range(n_layers))
    return {
        "sandwich_norm": True,
        "activation": "geglu_tanh",
        "scale_embeddings": True,
        "attn_scale": scale,
        "rope_local_base": 10_000.0,
        "layer_types": pattern if window else (),
    }


def unfused(key: str, tensor: torch.Tensor, cfg: TransformerConfig) -> dict[str, torch.Tensor]:
    """phi3 stores Q, K, V as one ``attn_qkv`` (queries, keys, values) and gate + up as one ``ffn_up`` (gate
    first): split them. Anything else passes as it is."""
    q, kv = cfg.n_heads * cfg.d_k, cfg.kv_heads * cfg.d_k
    if key.startswith("blk.") and key.endswith(".attn_qkv.weight") and tensor.size(0) == q + 2 * kv:
        b = f"blocks.{key.split('.')[1]}.attn"
        return {
            f"{b}.w_q.weight": tensor[:q],
            f"{b}.w_k.weight": tensor[q : q + kv],
            f"{b}.w_v.weight": tensor[q + kv :],
        }
    if key.endswith("ff.fc1.weight") and cfg.gated and tensor.size(0) == 2 * cfg.d_ff:
        return {key.replace("ff.fc1", "ff.gate"): tensor[: cfg.d_ff], key: tensor[cfg.d_ff :]}
    return {key: tensor}


_ARCH_NAMES = {
    "llama": "LLaMA",
    "qwen2": "Qwen2 (Q/K/V biases)",
    "qwen3": "Qwen3 (QK-norm)",
    "phi3": "Phi-3 (fused QKV and gate/up)",
    "gemma3": "Gemma 3 (sandwich norms, QK-norm, GeGLU)",
    "gemma2": "Gemma 2 (sandwich norms, GeGLU, soft-capped scores and logits)",
    "granite": "Granite (LLaMA with multipliers)",
    "olmo2": "OLMo 2 (norms on the sublayers' outputs, QK-norm over the projection)",
    "qwen3moe": "Qwen3-MoE (QK-norm, mixture of experts)",
    "gpt-oss": "gpt-oss (learned attention sinks, mixture of experts)",
}


def family(arch: str, cfg: TransformerConfig) -> str:
    sliding = cfg.layer_types.count("sliding")
    window = f"; {sliding} of {cfg.n_layers} layers sliding (window {cfg.sliding_window})" if sliding else ""
    name = _ARCH_NAMES.get(arch, arch)
    if arch == "llama" and cfg.n_experts:
        name = "LLaMA (Mixtral-style mixture of experts)"
    if cfg.n_experts:
        moe = sum(cfg.is_moe(i) for i in range(cfg.n_layers))
        name += f", {cfg.n_experts} experts, {cfg.experts_per_token} per token in {moe} of {cfg.n_layers} layers"
    return f"{name} from GGUF{window}{'' if cfg.tie_lm_head else '; untied output head'}"


#: llama.cpp names (below "blk.{i}.") beyond model.io.gguf's LLaMA map: attention output biases, gpt-oss's sinks and
#: the experts — the router ``ffn_gate_inp`` (E, d) and one tensor per projection for all experts: gate and up
#: (E, f, d), down (E, d, f), as llama.cpp stores them (ne = [d, f, E] read fastest axis last)
EXTRA_LAYER_MAP = {
    "attn_output.bias": "attn.w_o.bias",
    "attn_sinks.weight": "attn.sinks",
    "ffn_gate_inp.weight": "ff.router.weight",
    "ffn_gate_inp.bias": "ff.router.bias",
    "ffn_gate_exps.weight": "ff.experts.gate",
    "ffn_up_exps.weight": "ff.experts.up",
    "ffn_down_exps.weight": "ff.experts.down",
    "ffn_gate_exps.bias": "ff.experts.gate_bias",
    "ffn_up_exps.bias": "ff.experts.up_bias",
    "ffn_down_exps.bias": "ff.experts.down_bias",
}
#: where an architecture gives a llama.cpp name another place: gpt-oss's post_attention_norm is the norm before its
#: experts (Hugging Face's post_attention_layernorm), not a sandwich norm after attention
ARCH_LAYER_MAP = {"gpt-oss": {"post_attention_norm.weight": "ln2.weight"}}
#: llama.cpp's alternating sliding layers (set_swa_pattern(2)): layers 0, 2, 4, … slide, the others see everything
ALTERNATING = ("gemma2", "gpt-oss")
OSS_SWIGLU_LIMIT = 7.0  # llama.cpp's gpt-oss experts: a constant, not in the file


def arch_fields(arch: str, field: Callable[[str, Any], Any], names: set[str], n_layers: int) -> dict[str, Any]:
    """What a GGUF of ``arch`` implies beyond LLaMA, read from its metadata (``field(key, default)``, key below the
    architecture) and its tensors' ``names``: biases and experts wherever the tensors are, then per architecture."""
    out: dict[str, Any] = {
        "bias": "blk.0.attn_q.bias" in names,
        "o_bias": "blk.0.attn_output.bias" in names,
    }
    moe = [i for i in range(n_layers) if f"blk.{i}.ffn_gate_inp.weight" in names]
    if moe:
        out.update(
            n_experts=int(_need(field, "expert_count")),
            experts_per_token=int(_need(field, "expert_used_count")),
            moe_layers=tuple(moe) if len(moe) < n_layers else (),
            moe_d_ff=int(field("expert_feed_forward_length", 0) or 0),
            router_norm_topk=bool(field("expert_weights_norm", True)),  # llama.cpp's default for these
            router_bias=f"blk.{moe[0]}.ffn_gate_inp.bias" in names,
            expert_bias=f"blk.{moe[0]}.ffn_gate_exps.bias" in names,
        )
    window = int(field("attention.sliding_window", 0) or 0)
    if arch in ALTERNATING and window:
        out["layer_types"] = tuple("sliding" if i % 2 == 0 else "global" for i in range(n_layers))
    if arch == "granite":  # the four multipliers (1 where the file has none)
        out.update(
            embed_multiplier=float(field("embedding_scale", 1.0)),
            residual_multiplier=float(field("residual_scale", 1.0)),
            attn_scale=float(field("attention.scale", 0.0) or 0.0),
            logit_divisor=float(field("logit_scale", 1.0)),
        )
    elif arch == "olmo2":  # norms on the sublayers' outputs only, QK-norm over the whole projection
        out.update(input_norms=False, sandwich_norm=True, qk_norm=True, qk_norm_scope="all")
    elif arch == "gpt-oss":
        out.update(attn_sinks=True, activation="swiglu_oss", swiglu_limit=OSS_SWIGLU_LIMIT)
    return out


def gemma2_fields(field: Callable[[str, Any], Any], d_model: int, n_heads: int, d_k: int, n_layers: int) -> dict:
    """Gemma 2 as llama.cpp runs it: Gemma 3's block without QK-norm or a second RoPE base, both soft caps from the
    file, and 1/√d_k attention (the 27B, 46 layers: 1/√(d_model / H)) — query_pre_attn_scalar is not stored."""
    return {
        "sandwich_norm": True,
        "activation": "geglu_tanh",
        "scale_embeddings": True,
        "attn_scale": (d_model / n_heads if n_layers == 46 else d_k) ** -0.5,
        "attn_softcap": float(field("attn_logit_softcapping", 0.0) or 0.0),
        "logit_softcap": float(field("final_logit_softcapping", 0.0) or 0.0),
    }


def rope_scaling_fields(field: Callable[[str, Any], Any]) -> dict[str, Any]:
    """``rope.scaling.*`` as llama.cpp reads it: linear (positions ÷ factor) and YaRN (its ramp's corner dimensions
    rounded, as ggml does); anything else refused by name."""
    kind = field("rope.scaling.type", "none") or "none"
    if kind == "none":
        return {}
    factor = float(field("rope.scaling.factor", 1.0) or 1.0)
    if kind == "linear":
        return {"rope_scaling": "linear", "rope_factor": factor}
    if kind != "yarn":
        raise CheckpointError(f"the GGUF file's RoPE scaling {kind!r} is not supported (linear, yarn)")
    original = int(field("rope.scaling.original_context_length", 0) or 0)
    if original < 1:
        raise CheckpointError("the GGUF file's YaRN scaling lacks rope.scaling.original_context_length")
    return {
        "rope_scaling": "yarn",
        "rope_factor": factor,
        "rope_original_max": original,
        "rope_beta_fast": float(field("rope.scaling.yarn_beta_fast", 32.0) or 32.0),
        "rope_beta_slow": float(field("rope.scaling.yarn_beta_slow", 1.0) or 1.0),
        "rope_yarn_truncate": True,
    }


def _need(field: Callable[[str, Any], Any], key: str) -> Any:
    value = field(key, None)
    if value is None:
        raise CheckpointError(f"the GGUF file has experts but its metadata lacks their {key}")
    return value


def llama_cpp_constants(arch: str, cfg: TransformerConfig) -> list[str]:
    """The load report's notes: each value taken from llama.cpp's code because the file does not store it."""
    notes = []
    if arch == "gemma2":
        notes.append(
            f"attention scale {cfg.attn_scale:.4g} as llama.cpp computes it (query_pre_attn_scalar is not in a GGUF)"
        )
    if arch == "gpt-oss":
        notes.append(f"the experts' SwiGLU limit is llama.cpp's constant {OSS_SWIGLU_LIMIT:g} (not in the file)")
    if cfg.rope_scaling == "yarn":
        notes.append("YaRN's ramp between kept and interpolated frequencies rounded to whole pairs, as ggml does")
    if cfg.n_experts:
        kept = "renormalised to sum to 1" if cfg.router_norm_topk else "kept as their share of all experts"
        notes.append(f"the chosen experts' weights are {kept}")
    return notes


def rope_freqs_fields(reader) -> dict[str, Any]:
    """Llama 3.x's scaled RoPE as llama.cpp stores it: ``rope_freqs.weight``, one divisor per rotated pair (its
    angles turn that many times slower), read as the "factors" kind of model/rope_scaling.py."""
    found = next((t for t in reader.tensors if t.name == "rope_freqs.weight"), None)
    if found is None:
        return {}
    import gguf

    values = np.asarray(gguf.quants.dequantize(found.data, found.tensor_type), dtype=np.float32).ravel()
    if not np.isfinite(values).all() or (values <= 0).any():
        raise CheckpointError("the GGUF file's rope_freqs holds factors that are not positive numbers")
    return {"rope_scaling": "factors", "rope_short_factor": tuple(float(v) for v in values)}
