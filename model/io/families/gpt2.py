"""GPT-2 folders (``model_type: gpt2``): pre-norm LayerNorm blocks with biases everywhere, learned absolute
positions, tanh GELU, a causal mask and the next-token head: tied to the token embeddings, or its own
``lm_head.weight`` when the file holds one that differs from them (``tie_word_embeddings: false``).

GPT-2 stores its projections as ``Conv1D``: y = x @ W + b with W of shape (in, out), the transpose of a Linear's
weight, and Q, K and V as one (d, 3d) matrix ``c_attn``; both are undone here."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch

from model.config import TransformerConfig
from model.errors import CheckpointError
from model.io.families.common import Folder, activation, config, family_loader, head_is_own, need
from model.io.report import Ledger

ANCHOR = "wte.weight"


def gpt2_config(raw: Mapping[str, Any], own_head: bool = False) -> TransformerConfig:
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
        tie_lm_head=not own_head,
    )


def map_gpt2_weights(led: Ledger, cfg: TransformerConfig) -> dict[str, torch.Tensor]:
    d = cfg.d_model
    out = {"tok_emb.weight": led.take("wte.weight"), "pos_enc.embedding.weight": led.take("wpe.weight")}
    out.update({"ln_f.weight": led.take("ln_f.weight"), "ln_f.bias": led.take("ln_f.bias")})
    if not cfg.tie_lm_head:
        out["lm_head.weight"] = led.take("lm_head.weight")
    for i in range(cfg.n_layers):
        p, b = f"h.{i}.", f"blocks.{i}."
        for part in ("weight", "bias"):
            out[f"{b}ln1.{part}"], out[f"{b}ln2.{part}"] = led.take(f"{p}ln_1.{part}"), led.take(f"{p}ln_2.{part}")
        qkv_w, qkv_b = led.peek(f"{p}attn.c_attn.weight"), led.peek(f"{p}attn.c_attn.bias")
        if qkv_w is not None and qkv_b is not None and tuple(qkv_w.shape) == (d, 3 * d):
            led.take(f"{p}attn.c_attn.weight"), led.take(f"{p}attn.c_attn.bias")
            for j, name in enumerate(("w_q", "w_k", "w_v")):
                out[f"{b}attn.{name}.weight"] = qkv_w[:, j * d : (j + 1) * d].t()  # Conv1D (d, d) -> Linear
                out[f"{b}attn.{name}.bias"] = qkv_b[j * d : (j + 1) * d]
        for src, dst in (("attn.c_proj", "attn.w_o"), ("mlp.c_fc", "ff.fc1"), ("mlp.c_proj", "ff.fc2")):
            w = led.take(f"{p}{src}.weight")
            out[f"{b}{dst}.weight"] = None if w is None else w.t()  # (in, out) -> (out, in)
            out[f"{b}{dst}.bias"] = led.take(f"{p}{src}.bias")
    return {k: v for k, v in out.items() if v is not None}  # what is missing shows as "missing keys"


def _gpt2(src: Folder):
    own = head_is_own(src, "lm_head.weight", "wte.weight", src.raw.get("tie_word_embeddings", True) is not False)
    cfg = gpt2_config(src.raw, own)
    head = "its own next-token head" if own else "tied head"
    return cfg, map_gpt2_weights(src.ledger, cfg), f"GPT-2 (pre-norm, learned positions, tanh GELU, {head})"


load = family_loader(ANCHOR, "transformer.", _gpt2, gpt2_config)
