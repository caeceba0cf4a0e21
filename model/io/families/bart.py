"""BART and mBART folders (``model_type: bart`` / ``mbart``): an encoder–decoder with learned absolute positions
numbered from 2 (fairseq's offset), a LayerNorm right after the embeddings (``layernorm_embedding``), biases
everywhere, GELU, and the token embeddings shared by both stacks and the next-token head, plus a bias per token on the
logits (``final_logits_bias``). BART's blocks are post-norm (self-attention, cross-attention, feed-forward, each
followed by its norm); mBART's are pre-norm with a final norm per stack. ``scale_embedding`` multiplies the token
embeddings by √d_model."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch

from model.config import TransformerConfig
from model.errors import CheckpointError
from model.io.families.common import activation, config, head_is_own, need, open_folder
from model.io.families.encdec import build_pair

ANCHOR = "shared.weight"
OFFSET = 2
LAYER = {
    "self_attn.q_proj": "attn.w_q",
    "self_attn.k_proj": "attn.w_k",
    "self_attn.v_proj": "attn.w_v",
    "self_attn.out_proj": "attn.w_o",
    "self_attn_layer_norm": "ln1",
    "encoder_attn.q_proj": "cross.w_q",
    "encoder_attn.k_proj": "cross.w_k",
    "encoder_attn.v_proj": "cross.w_v",
    "encoder_attn.out_proj": "cross.w_o",
    "encoder_attn_layer_norm": "ln_cross",
    "fc1": "ff.fc1",
    "fc2": "ff.fc2",
    "final_layer_norm": "ln2",
}


def configs(raw: Mapping[str, Any], own_head: bool = False) -> tuple[TransformerConfig, TransformerConfig]:
    """The encoder's and the decoder's configs."""
    pre = raw.get("model_type") == "mbart"
    pad = raw.get("pad_token_id", 1)
    common = dict(
        vocab_size=need(raw, "vocab_size"),
        d_model=need(raw, "d_model"),
        max_seq_len=need(raw, "max_position_embeddings"),
        norm="pre" if pre else "post",
        positional="learned",
        position_offset=OFFSET,
        activation=activation(raw.get("activation_function", "gelu")),
        bias=True,
        ff_bias=True,
        layer_norm_eps=1e-5,
        scale_embeddings=raw.get("scale_embedding", False) is True,
        embedding_layer_norm=True,
        final_layer_norm=pre,
        pad_token_id=pad if isinstance(pad, int) and not isinstance(pad, bool) else 1,
    )
    enc = config(**common, n_layers=need(raw, "encoder_layers"), n_heads=need(raw, "encoder_attention_heads"),
                 d_ff=need(raw, "encoder_ffn_dim"))  # fmt: skip
    dec = config(**common, n_layers=need(raw, "decoder_layers"), n_heads=need(raw, "decoder_attention_heads"),
                 d_ff=need(raw, "decoder_ffn_dim"), causal=True, cross_attention=True, lm_head=True,
                 tie_lm_head=not own_head, lm_bias=True)  # fmt: skip
    return enc, dec


def _stack(led, which: str, cfg: TransformerConfig, pre: bool) -> dict[str, torch.Tensor | None]:
    out: dict[str, torch.Tensor | None] = {}
    for i in range(cfg.n_layers):
        for a, b in LAYER.items():
            if b.startswith(("cross", "ln_cross")) and which == "encoder":
                continue
            for part in ("weight", "bias"):
                out[f"{which}.blocks.{i}.{b}.{part}"] = led.take(f"{which}.layers.{i}.{a}.{part}")
    out[f"{which}.pos_enc.embedding.weight"] = led.take(f"{which}.embed_positions.weight")
    for part in ("weight", "bias"):
        out[f"{which}.emb_ln.{part}"] = led.take(f"{which}.layernorm_embedding.{part}")
        if pre:
            out[f"{which}.ln_f.{part}"] = led.take(f"{which}.layer_norm.{part}")
    emb = f"{which}.embed_tokens.weight"
    if emb in led:
        if not torch.equal(led.peek(emb), led.peek(ANCHOR)):
            raise CheckpointError(f"{emb} differs from shared.weight: the stacks would read different tables")
        led.mark_redundant(emb, "the shared token embeddings again")
    out[f"{which}.tok_emb.weight"] = led.peek(ANCHOR)
    return out


def load(folder, raw: Mapping[str, Any]):
    enc, dec = configs(raw)
    pre = enc.norm == "pre"
    src = open_folder(folder, raw, ANCHOR, "model.")
    led = src.ledger
    own = head_is_own(src, "lm_head.weight", ANCHOR, raw.get("tie_word_embeddings", True) is not False)
    if own:
        enc, dec = configs(raw, own_head=True)
    state = {**_stack(led, "encoder", enc, pre), **_stack(led, "decoder", dec, pre)}
    led.take(ANCHOR)
    bias = led.take("final_logits_bias")
    state["decoder.lm_bias"] = bias.reshape(-1) if bias is not None else torch.zeros(enc.vocab_size)
    if own:
        state["decoder.lm_head.weight"] = led.take("lm_head.weight")
    missing = [k for k, v in state.items() if v is None]
    if missing:
        raise CheckpointError(f"the file lacks {len(missing)} of this model's tensors, such as {missing[0]}")
    kind = "mBART (pre-norm, a final norm per stack" if pre else "BART (post-norm"
    family = f"{kind}; learned positions from {OFFSET}, the embeddings' LayerNorm, a bias on the logits)"
    start = raw.get("decoder_start_token_id", 2)
    ids = [int(start)] if isinstance(start, int) and not isinstance(start, bool) else [2]
    return build_pair(src, enc, dec, {k: v for k, v in state.items() if v is not None}, family, ids)
