"""GPT-2 folders (``model_type: gpt2``): pre-norm LayerNorm blocks with biases everywhere, learned absolute
positions, tanh GELU, a causal mask and the next-token head tied to the token embeddings.

GPT-2 stores its projections as ``Conv1D``: y = x @ W + b with W of shape (in, out), the transpose of a Linear's
weight, and Q, K and V as one (d, 3d) matrix ``c_attn``; both are undone here."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import torch

from model.config import TransformerConfig
from model.errors import CheckpointError
from model.io.families.common import activation, build, config, leftovers, need
from model.io.state import LoadedModel


def gpt2_config(raw: Mapping[str, Any]) -> TransformerConfig:
    if raw.get("scale_attn_weights", True) is not True or raw.get("scale_attn_by_inverse_layer_idx"):
        raise CheckpointError("only GPT-2's standard 1/√d_k attention scaling is supported")
    d = need(raw, "n_embd")
    return config(
        vocab_size=need(raw, "vocab_size"),
        d_model=d,
        n_heads=need(raw, "n_head"),
        n_layers=need(raw, "n_layer"),
        d_ff=raw.get("n_inner") or 4 * d,
        max_seq_len=need(raw, "n_positions"),
        norm="pre",
        positional="learned",
        activation=activation(raw.get("activation_function", "gelu_new")),
        bias=True,
        ff_bias=True,
        layer_norm_eps=float(raw.get("layer_norm_epsilon", 1e-5)),
        scale_embeddings=False,
        final_layer_norm=True,
        causal=True,
        lm_head=True,
        tie_lm_head=True,
    )


def map_gpt2_weights(hf: dict[str, torch.Tensor], cfg: TransformerConfig) -> dict[str, torch.Tensor]:
    hf = {k.removeprefix("transformer."): v for k, v in hf.items()}
    d = cfg.d_model
    out = {"tok_emb.weight": hf.get("wte.weight"), "pos_enc.embedding.weight": hf.get("wpe.weight")}
    out.update({"ln_f.weight": hf.get("ln_f.weight"), "ln_f.bias": hf.get("ln_f.bias")})
    for i in range(cfg.n_layers):
        p, b = f"h.{i}.", f"blocks.{i}."
        for part in ("weight", "bias"):
            out[f"{b}ln1.{part}"], out[f"{b}ln2.{part}"] = hf.get(f"{p}ln_1.{part}"), hf.get(f"{p}ln_2.{part}")
        qkv_w, qkv_b = hf.get(f"{p}attn.c_attn.weight"), hf.get(f"{p}attn.c_attn.bias")
        if qkv_w is not None and qkv_b is not None and tuple(qkv_w.shape) == (d, 3 * d):
            for j, name in enumerate(("w_q", "w_k", "w_v")):
                out[f"{b}attn.{name}.weight"] = qkv_w[:, j * d : (j + 1) * d].t()  # Conv1D (d, d) -> Linear
                out[f"{b}attn.{name}.bias"] = qkv_b[j * d : (j + 1) * d]
        for src, dst in (("attn.c_proj", "attn.w_o"), ("mlp.c_fc", "ff.fc1"), ("mlp.c_proj", "ff.fc2")):
            w = hf.get(f"{p}{src}.weight")
            out[f"{b}{dst}.weight"] = None if w is None else w.t()  # (in, out) -> (out, in)
            out[f"{b}{dst}.bias"] = hf.get(f"{p}{src}.bias")
    used = {k for k in hf if k.startswith(("wte.", "wpe.", "ln_f.")) or k.split(".")[0] == "h"}
    found = {k: v for k, v in out.items() if v is not None}  # what is missing shows as "missing keys"
    # lm_head is tied to wte; attn.bias / attn.masked_bias are causal-mask buffers of older exports
    return {**found, **leftovers(hf, used, ("lm_head.weight", "attn.bias", "attn.masked_bias"))}


def load(folder: Path, raw: Mapping[str, Any]) -> LoadedModel:
    return build(folder, raw, gpt2_config(raw), map_gpt2_weights, "GPT-2 (pre-norm, learned positions, tanh GELU)")
