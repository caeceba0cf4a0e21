"""GPT-NeoX / Pythia folders (``model_type: gpt_neox``): pre-norm LayerNorm blocks whose attention and MLP both
read the block's input (a parallel residual, unless ``use_parallel_residual`` is off), partial rotary (the first
``partial_rotary_factor`` of each head, rotate-half), exact GELU, biases, an untied head, and Q, K and V fused per
head in ``query_key_value``: its rows are head 0's q, k, v, then head 1's, …"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import torch

from model.config import TransformerConfig
from model.io.families.common import activation, build, config, leftovers, need, rename, rope_base
from model.io.state import LoadedModel

LAYER_MAP = {
    "attention.dense": "attn.w_o",
    "mlp.dense_h_to_4h": "ff.fc1",
    "mlp.dense_4h_to_h": "ff.fc2",
    "input_layernorm": "ln1",
    "post_attention_layernorm": "ln2",
}


def neox_config(raw: Mapping[str, Any]) -> TransformerConfig:
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
        tie_lm_head=bool(raw.get("tie_word_embeddings", False)),
    )


def map_neox_weights(hf: dict[str, torch.Tensor], cfg: TransformerConfig) -> dict[str, torch.Tensor]:
    hf = {k.removeprefix("gpt_neox."): v for k, v in hf.items()}
    top = {"embed_in.weight": "tok_emb.weight", "final_layer_norm.weight": "ln_f.weight"}
    top |= {"final_layer_norm.bias": "ln_f.bias"}
    if not cfg.tie_lm_head:  # transformers 5 names it lm_head, older exports embed_out
        top |= {"embed_out.weight": "lm_head.weight", "lm_head.weight": "lm_head.weight"}
    out, used = rename(hf, cfg.n_layers, top, LAYER_MAP, "layers.{i}.")
    H, dk = cfg.n_heads, cfg.d_k
    for i in range(cfg.n_layers):
        for part in ("weight", "bias"):
            key = f"layers.{i}.attention.query_key_value.{part}"
            if key in hf:
                fused = hf[key].reshape(H, 3, dk, *hf[key].shape[1:])  # (H, 3, d_k[, d_model]): q, k, v per head
                for j, name in enumerate(("w_q", "w_k", "w_v")):
                    out[f"blocks.{i}.attn.{name}.{part}"] = fused[:, j].reshape(H * dk, *hf[key].shape[1:])
                used.add(key)
    ignorable = ("rotary_emb.inv_freq", "attention.bias", "attention.masked_bias", "lm_head.weight")
    return {**out, **leftovers(hf, used, ignorable)}


def load(folder: Path, raw: Mapping[str, Any]) -> LoadedModel:
    cfg = neox_config(raw)
    kind = "parallel" if cfg.parallel_residual else "sequential"
    return build(
        folder, raw, cfg, map_neox_weights, f"GPT-NeoX ({kind} residual, rotary on {cfg.rope_dims} of {cfg.d_k})"
    )
