"""ModernBERT folders (``model_type: modernbert``): a pre-norm encoder with RoPE instead of position embeddings,
Q, K and V fused in ``Wqkv`` (all queries, then keys, then values), GeGLU with ``Wi`` holding the activated half
first, no biases (LayerNorms without a bias get zeros: the same function), a norm after the embeddings and none
before layer 0's attention, and local layers — a bidirectional window of local_attention keys, half each side —
between global ones, each kind with its own RoPE base. A ModernBertForMaskedLM's head (``head``: dense, the
classifier activation, a norm; ``decoder`` tied to the embeddings unless the file holds its own) is read; a
classifier's ``head`` is named and left out."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch

from model.config import TransformerConfig
from model.errors import CheckpointError
from model.io.families.common import Folder, MLMNames, activation, config, family_loader, layer_types, need, take_mlm
from model.io.families.gemma3 import _theta

ANCHOR = "embeddings.tok_embeddings.weight"
MLM = MLMNames("head.dense", "head.norm", "decoder")


def modernbert_config(raw: Mapping[str, Any], **overrides: Any) -> TransformerConfig:
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
        **overrides,
    )


def map_modernbert_weights(led, cfg: TransformerConfig) -> dict[str, torch.Tensor]:
    out = {}

    def norm(src: str, dst: str) -> None:
        if f"{src}.weight" in led:
            weight = led.take(f"{src}.weight")
            bias = led.take(f"{src}.bias")
            out[f"{dst}.weight"] = weight
            out[f"{dst}.bias"] = torch.zeros_like(weight) if bias is None else bias  # norm_bias=False: zero, the same

    if "embeddings.tok_embeddings.weight" in led:
        out["tok_emb.weight"] = led.take("embeddings.tok_embeddings.weight")
    norm("embeddings.norm", "emb_ln")
    norm("final_norm", "ln_f")
    d, f = cfg.d_model, cfg.d_ff
    for i in range(cfg.n_layers):
        p, b = f"layers.{i}.", f"blocks.{i}."
        if i:
            norm(f"{p}attn_norm", f"{b}ln1")
        norm(f"{p}mlp_norm", f"{b}ln2")
        qkv, wi = led.peek(f"{p}attn.Wqkv.weight"), led.peek(f"{p}mlp.Wi.weight")
        if qkv is not None and qkv.size(0) == 3 * d:  # (3 d, d): q, k, v
            out[f"{b}attn.w_q.weight"], out[f"{b}attn.w_k.weight"], out[f"{b}attn.w_v.weight"] = qkv.chunk(3)
            led.take(f"{p}attn.Wqkv.weight")
        if wi is not None and wi.size(0) == 2 * f:  # (2 d_ff, d): the activated half first, then the gate
            out[f"{b}ff.gate.weight"], out[f"{b}ff.fc1.weight"] = wi[:f], wi[f:]
            led.take(f"{p}mlp.Wi.weight")
        for src, dst in ((f"{p}attn.Wo.weight", f"{b}attn.w_o.weight"), (f"{p}mlp.Wo.weight", f"{b}ff.fc2.weight")):
            if src in led:
                out[dst] = led.take(src)
    return out


def _modernbert(src: Folder):
    led = src.ledger
    head, own = {}, False
    if f"{MLM.dense}.weight" in led and "classifier.weight" not in led:
        head, own = take_mlm(src, MLM, ANCHOR, need(src.raw, "hidden_size"))
    else:
        for name in led.pending():
            if name.startswith("head."):
                led.mark_left_out(name, "the classifier's prediction head (dense, activation, norm), read only by it")
    act = activation(src.raw.get("classifier_activation", "gelu"))
    cfg = modernbert_config(src.raw, mlm_head=bool(head), tie_mlm_head=not own, mlm_activation=act)
    local = f"{cfg.layer_types.count('sliding')} of {cfg.n_layers} layers local (window {cfg.sliding_window})"
    mlm = "; its MLM head" if cfg.mlm_head else ""
    return (
        cfg,
        {**map_modernbert_weights(led, cfg), **head},
        f"ModernBERT (RoPE encoder, GeGLU, no biases; {local}{mlm})",
    )


load = family_loader(ANCHOR, "model.", _modernbert, modernbert_config)
