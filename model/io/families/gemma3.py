"""Gemma 3 text folders (``model_type: gemma3_text``): LLaMA-like blocks with a norm before *and* after each
sublayer (sandwich norms), RMSNorm scaling by (1 + w), QK-norm, GeGLU with tanh GELU, embeddings × √d_model,
q·k scaled by query_pre_attn_scalar^-½, sliding-window and global layers (``layer_types``) whose RoPE turn with
different bases, a tied head and optional final-logit soft-capping."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from model.config import TransformerConfig
from model.errors import CheckpointError
from model.io.families.common import layer_types, need
from model.io.families.llama import _head, llama_config, loader, map_llama_weights

LAYER_MAP = {
    "self_attn.q_proj": "attn.w_q",
    "self_attn.k_proj": "attn.w_k",
    "self_attn.v_proj": "attn.w_v",
    "self_attn.o_proj": "attn.w_o",
    "self_attn.q_norm": "attn.q_norm",
    "self_attn.k_norm": "attn.k_norm",
    "mlp.gate_proj": "ff.gate",
    "mlp.up_proj": "ff.fc1",
    "mlp.down_proj": "ff.fc2",
    "input_layernorm": "ln1",
    "post_attention_layernorm": "ln1_post",  # after attention, before the residual (LLaMA's name, Gemma's place)
    "pre_feedforward_layernorm": "ln2",
    "post_feedforward_layernorm": "ln2_post",
}


def _theta(params: Any, kind: str, default: float) -> float:
    entry = params.get(kind) if isinstance(params, dict) else None
    if not isinstance(entry, dict):
        return default
    if entry.get("rope_type", "default") != "default":
        raise CheckpointError(f"RoPE scaling {entry.get('rope_type')!r} on {kind} layers is not supported yet")
    return float(entry.get("rope_theta", default))


def gemma3_config(raw: Mapping[str, Any], own_head: bool = False) -> TransformerConfig:
    if raw.get("use_bidirectional_attention"):
        raise CheckpointError("bidirectional Gemma 3 (use_bidirectional_attention) is not supported yet")
    if raw.get("attn_logit_softcapping"):
        raise CheckpointError("attention-logit soft-capping (Gemma 2) is not supported yet")
    act = raw.get("hidden_activation", "gelu_pytorch_tanh")
    if act not in ("gelu_pytorch_tanh", "gelu"):
        raise CheckpointError(f"hidden_activation {act!r}: Gemma uses GeGLU (gelu_pytorch_tanh)")
    params = raw.get("rope_parameters")
    n_layers = need(raw, "num_hidden_layers")
    types, window = layer_types(raw, n_layers, raw.get("sliding_window"))
    softcap = raw.get("final_logit_softcapping")
    base = {k: v for k, v in raw.items() if k not in ("hidden_act", "rope_parameters", "layer_types", "sliding_window")}
    return llama_config(
        {**base, "hidden_act": "silu"},  # the gate's activation is set below
        activation="geglu_tanh" if act == "gelu_pytorch_tanh" else "geglu",
        qk_norm=True,
        sandwich_norm=True,
        norm_offset=1.0,
        scale_embeddings=True,
        attn_scale=float(need(raw, "query_pre_attn_scalar", float)) ** -0.5,
        rope_base=_theta(params, "full_attention", 1_000_000.0),
        rope_local_base=_theta(params, "sliding_attention", 10_000.0),
        layer_types=types,
        sliding_window=window,
        logit_softcap=float(softcap) if softcap else 0.0,
        tie_lm_head=not own_head,
    )


def _family(cfg: TransformerConfig) -> str:
    pattern = f"{cfg.layer_types.count('sliding')} of {cfg.n_layers} layers sliding (window {cfg.sliding_window})"
    return f"Gemma 3 (sandwich norms, QK-norm, GeGLU; {pattern}; {_head(cfg)})"


load = loader(
    lambda src, own: gemma3_config(src.raw, own),
    _family,
    tied_by_default=True,
    weights=lambda led, cfg: map_llama_weights(led, cfg, LAYER_MAP),
)
