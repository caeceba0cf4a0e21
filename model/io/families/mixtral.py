"""Mixtral folders (``model_type: mixtral``): Mistral with a mixture of experts in every layer — a router
(``block_sparse_moe.gate``) picks ``num_experts_per_tok`` of ``num_local_experts`` SwiGLU experts (w1 gate, w3 up,
w2 down) for each token and mixes them by its softmax weights renormalised over the chosen ones."""

from __future__ import annotations

from model.config import TransformerConfig
from model.io.families.common import need
from model.io.families.llama import LAYER_MAP, _head, llama_config, loader, map_llama_weights
from model.io.families.moe import moe_family, router, stack_experts
from model.io.report import Ledger

ATTENTION_MAP = {k: v for k, v in LAYER_MAP.items() if not k.startswith("mlp.")}


def mixtral_config(raw, own_head: bool = False) -> TransformerConfig:
    return llama_config(
        raw,
        window=raw.get("sliding_window"),
        n_experts=need(raw, "num_local_experts"),
        experts_per_token=need(raw, "num_experts_per_tok"),
        tie_lm_head=not own_head,
    )


def weights(led: Ledger, cfg: TransformerConfig) -> dict:
    out = map_llama_weights(led, cfg, ATTENTION_MAP)
    for i in range(cfg.n_layers):
        moe = f"layers.{i}.block_sparse_moe."
        out |= router(led, i, moe + "gate")
        out |= stack_experts(led, cfg, i, moe + "experts.", {"gate": "w1", "up": "w3", "down": "w2"})
    return out


load = loader(
    lambda src, own: mixtral_config(src.raw, own),
    lambda cfg: f"Mixtral (Mistral with {moe_family(cfg)}; {_head(cfg)})",
    weights=weights,
)
