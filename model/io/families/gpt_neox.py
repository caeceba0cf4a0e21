"""GPT-NeoX / Pythia folders (``model_type: gpt_neox``): pre-norm LayerNorm blocks whose attention and MLP both
read the block's input (a parallel residual, unless ``use_parallel_residual`` is off), partial rotary (the first
``partial_rotary_factor`` of each head, rotate-half), exact GELU, biases, an untied head (``embed_out``, or
``lm_head`` in transformers 5; tied when the file holds none and the config ties it), and Q, K and V fused per head in
``query_key_value``: its rows are head 0's q, k, v, then head 1's, …"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch

from model.config import TransformerConfig
from model.io.families.common import Folder, activation, config, family_loader, head_is_own, need, rename, rope_base
from model.io.report import Ledger

ANCHOR = "embed_in.weight"

LAYER_MAP = {
    "attention.dense": "attn.w_o",
    "mlp.dense_h_to_4h": "ff.fc1",
    "mlp.dense_4h_to_h": "ff.fc2",
    "input_layernorm": "ln1",
    "post_attention_layernorm": "ln2",
}


def neox_config(raw: Mapping[str, Any], own_head: bool = True) -> TransformerConfig:
    d, heads = need(raw, "hidden_size"), need(raw, "num_attention_heads")
    params = raw.get("rope_parameters") if isinstance(raw.get("rope_parameters"), dict) else {}
    factor = params.get("partial_rotary_factor", raw.get("rotary_pct", 0.25))
    bias = bool(raw.get("attention_bias", True))
    return config(
        vocab_size=need(raw, "vocab_size"),
        d_model=d,
        n_heads=heads,
        n_layers=need(raw, "num_hidden_layers"),
        d_ff=need(raw, "intermediate_size"),
        max_seq_len=min(need(raw, "max_position_embeddings"), 65_536),
        norm="pre",
        positional="rope",
        rope_style="half",
        rope_base=rope_base({**raw, "rope_theta": params.get("rope_theta", raw.get("rotary_emb_base", 10000))}),
        rotary_dim=int(d // heads * factor) // 2 * 2,
        activation=activation(raw.get("hidden_act", "gelu")),
        bias=bias,
        ff_bias=True,
        layer_norm_eps=float(raw.get("layer_norm_eps", 1e-5)),
        scale_embeddings=False,
        final_layer_norm=True,
        parallel_residual=bool(raw.get("use_parallel_residual", True)),
        causal=True,
        lm_head=True,
        tie_lm_head=not own_head,
    )


def map_neox_weights(led: Ledger, cfg: TransformerConfig, head: str) -> dict[str, torch.Tensor]:
    top = {"embed_in.weight": "tok_emb.weight", "final_layer_norm.weight": "ln_f.weight"}
    top |= {"final_layer_norm.bias": "ln_f.bias"}
    if not cfg.tie_lm_head:
        top |= {head: "lm_head.weight"}
    out = rename(led, cfg.n_layers, top, LAYER_MAP, "layers.{i}.")
    H, dk = cfg.n_heads, cfg.d_k
    for i in range(cfg.n_layers):
        for part in ("weight", "bias"):
            key = f"layers.{i}.attention.query_key_value.{part}"
            if key in led:
                fused = led.take(key)
                fused = fused.reshape(H, 3, dk, *fused.shape[1:])  # (H, 3, d_k[, d_model]): q, k, v per head
                for j, name in enumerate(("w_q", "w_k", "w_v")):
                    out[f"blocks.{i}.attn.{name}.{part}"] = fused[:, j].reshape(H * dk, *fused.shape[3:])
    return out


def _neox(src: Folder):
    head = "lm_head.weight" if "lm_head.weight" in src.ledger else "embed_out.weight"  # transformers 5 / older
    own = head_is_own(src, head, ANCHOR, src.raw.get("tie_word_embeddings", False) is not False)
    cfg = neox_config(src.raw, own)
    kind = "parallel" if cfg.parallel_residual else "sequential"
    family = f"GPT-NeoX ({kind} residual, rotary on {cfg.rope_dims} of {cfg.d_k})"
    return cfg, map_neox_weights(src.ledger, cfg, head), family


load = family_loader(ANCHOR, "gpt_neox.", _neox, neox_config)
