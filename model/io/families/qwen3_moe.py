"""Qwen3-MoE folders (``model_type: qwen3_moe``): Qwen3 (QK-norm) with a mixture of experts in the layers
``decoder_sparse_step`` and ``mlp_only_layers`` leave to it — a router (``mlp.gate``) picks ``num_experts_per_tok``
of ``num_experts`` (transformers 5 writes ``num_local_experts``) SwiGLU experts of width ``moe_intermediate_size``;
``norm_topk_prob`` says whether the chosen weights are renormalised to sum to 1 or keep their share of the softmax
over all experts."""

from __future__ import annotations

from model.config import TransformerConfig
from model.errors import CheckpointError
from model.io.families.common import need
from model.io.families.llama import _head, llama_config, loader, map_llama_weights
from model.io.families.moe import moe_family, router, stack_experts
from model.io.families.qwen3 import QWEN3_MAP
from model.io.report import Ledger


def moe_layers(raw) -> tuple[int, ...]:
    n, step = need(raw, "num_hidden_layers"), raw.get("decoder_sparse_step", 1)
    dense = raw.get("mlp_only_layers") or []
    if isinstance(step, bool) or not isinstance(step, int) or step < 1:
        raise CheckpointError(f"config.json's decoder_sparse_step must be a positive integer, got {step!r}")
    if not isinstance(dense, list) or any(isinstance(i, bool) or not isinstance(i, int) for i in dense):
        raise CheckpointError(f"config.json's mlp_only_layers must list layer numbers, got {dense!r}")
    return tuple(i for i in range(n) if i not in dense and (i + 1) % step == 0)


def qwen3_moe_config(raw, own_head: bool = False) -> TransformerConfig:
    window = raw.get("sliding_window") if raw.get("use_sliding_window") else None
    layers = moe_layers(raw)
    return llama_config(
        raw,
        window=window,
        qk_norm=True,
        n_experts=need(raw, "num_experts" if "num_experts" in raw else "num_local_experts") if layers else 0,
        experts_per_token=need(raw, "num_experts_per_tok") if layers else 0,
        moe_layers=layers if 0 < len(layers) < need(raw, "num_hidden_layers") else (),
        moe_d_ff=need(raw, "moe_intermediate_size") if layers else 0,
        router_norm_topk=bool(raw.get("norm_topk_prob", False)),
        tie_lm_head=not own_head,
    )


def weights(led: Ledger, cfg: TransformerConfig) -> dict:
    moe = [i for i in range(cfg.n_layers) if cfg.is_moe(i)]
    out = map_llama_weights(led, cfg, {k: v for k, v in QWEN3_MAP.items() if not k.startswith("mlp.")})
    dense = {k: v for k, v in QWEN3_MAP.items() if k.startswith("mlp.")}
    for i in range(cfg.n_layers):
        if i in moe:
            out |= router(led, i, f"layers.{i}.mlp.gate")
            names = {"gate": "gate_proj", "up": "up_proj", "down": "down_proj"}
            out |= stack_experts(led, cfg, i, f"layers.{i}.mlp.experts.", names)
        else:
            for src, dst in dense.items():
                if f"layers.{i}.{src}.weight" in led:
                    out[f"blocks.{i}.{dst}.weight"] = led.take(f"layers.{i}.{src}.weight")
    return out


def _family(cfg: TransformerConfig) -> str:
    mix = "renormalised" if cfg.router_norm_topk else "not renormalised"
    return f"Qwen3-MoE (Qwen3 with {moe_family(cfg)}, the chosen weights {mix}; {_head(cfg)})"


load = loader(lambda src, own: qwen3_moe_config(src.raw, own), _family, weights=weights)
