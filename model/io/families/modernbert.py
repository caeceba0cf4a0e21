"""ModernBERT folders (``model_type: modernbert``): a pre-norm encoder with RoPE instead of position embeddings,
Q, K and V fused in ``Wqkv`` (all queries, then keys, then values), GeGLU with ``Wi`` holding the activated half
first, no biases (LayerNorms without a bias get zeros: the same function), a norm after the embeddings and none
before layer 0's attention, and local layers — a bidirectional window of local_attention keys, half each side —
between global ones, each kind with its own RoPE base."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import torch

from model.config import TransformerConfig
from model.errors import CheckpointError
from model.io.families.common import build, config, layer_types, leftovers, need
from model.io.families.gemma3 import _theta
from model.io.state import LoadedModel


def modernbert_config(raw: Mapping[str, Any]) -> TransformerConfig:
    if raw.get("hidden_activation", "gelu") not in ("gelu",):
        raise CheckpointError(f"hidden_activation {raw.get('hidden_activation')!r}: ModernBERT uses GeGLU with gelu")
    n_layers = need(raw, "num_hidden_layers")
    types, window = layer_types(raw, n_layers, need(raw, "local_attention"))
    params = raw.get("rope_parameters")
    pad = raw.get("pad_token_id")
    return config(
        vocab_size=need(raw, "vocab_size"),
        d_model=need(raw, "hidden_size"),
        n_heads=need(raw, "num_attention_heads"),
        n_layers=n_layers,
        d_ff=need(raw, "intermediate_size"),
        max_seq_len=min(need(raw, "max_position_embeddings"), 65_536),
        norm="pre",
        positional="rope",
        rope_style="half",
        rope_base=_theta(params, "full_attention", float(raw.get("global_rope_theta", 160_000.0))),
        rope_local_base=_theta(params, "sliding_attention", float(raw.get("local_rope_theta", 10_000.0))),
        activation="geglu",
        bias=bool(raw.get("attention_bias", False)),
        ff_bias=bool(raw.get("mlp_bias", False)),
        layer_norm_eps=float(raw.get("norm_eps", 1e-5)),
        scale_embeddings=False,
        embedding_layer_norm=True,
        final_layer_norm=True,
        first_attn_norm=False,
        layer_types=types,
        sliding_window=window,
        pad_token_id=pad if isinstance(pad, int) and 0 <= pad < need(raw, "vocab_size") else 0,
    )


def map_modernbert_weights(hf: dict[str, torch.Tensor], cfg: TransformerConfig) -> dict[str, torch.Tensor]:
    hf = {k.removeprefix("model."): v for k, v in hf.items()}
    out, used = {}, set()

    def norm(src: str, dst: str) -> None:
        if f"{src}.weight" in hf:
            weight = hf[f"{src}.weight"]
            out[f"{dst}.weight"] = weight
            out[f"{dst}.bias"] = hf.get(f"{src}.bias", torch.zeros_like(weight))  # norm_bias=False: zero, the same
            used.update({f"{src}.weight", f"{src}.bias"})

    if "embeddings.tok_embeddings.weight" in hf:
        out["tok_emb.weight"] = hf["embeddings.tok_embeddings.weight"]
        used.add("embeddings.tok_embeddings.weight")
    norm("embeddings.norm", "emb_ln")
    norm("final_norm", "ln_f")
    d, f = cfg.d_model, cfg.d_ff
    for i in range(cfg.n_layers):
        p, b = f"layers.{i}.", f"blocks.{i}."
        if i:
            norm(f"{p}attn_norm", f"{b}ln1")
        norm(f"{p}mlp_norm", f"{b}ln2")
        qkv, wi = hf.get(f"{p}attn.Wqkv.weight"), hf.get(f"{p}mlp.Wi.weight")
        if qkv is not None and qkv.size(0) == 3 * d:  # (3 d, d): q, k, v
            out[f"{b}attn.w_q.weight"], out[f"{b}attn.w_k.weight"], out[f"{b}attn.w_v.weight"] = qkv.chunk(3)
            used.add(f"{p}attn.Wqkv.weight")
        if wi is not None and wi.size(0) == 2 * f:  # (2 d_ff, d): the activated half first, then the gate
            out[f"{b}ff.gate.weight"], out[f"{b}ff.fc1.weight"] = wi[:f], wi[f:]
            used.add(f"{p}mlp.Wi.weight")
        for src, dst in ((f"{p}attn.Wo.weight", f"{b}attn.w_o.weight"), (f"{p}mlp.Wo.weight", f"{b}ff.fc2.weight")):
            if src in hf:
                out[dst] = hf[src]
                used.add(src)
    return {**out, **leftovers(hf, used, ("head.", "decoder.", "classifier."))}


def load(folder: Path, raw: Mapping[str, Any]) -> LoadedModel:
    cfg = modernbert_config(raw)
    local = f"{cfg.layer_types.count('sliding')} of {cfg.n_layers} layers local (window {cfg.sliding_window})"
    return build(folder, raw, cfg, map_modernbert_weights, f"ModernBERT (RoPE encoder, GeGLU, no biases; {local})")
