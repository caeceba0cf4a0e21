"""gpt-oss folders (``model_type: gpt_oss``): a decoder with learned attention sinks (``self_attn.sinks``: a logit
per head in every row's softmax that belongs to no token), biases on Q, K, V and O, sliding and full layers taking
turns, YaRN RoPE, and a mixture of experts in every layer — a router with a bias picks ``num_experts_per_tok``
experts whose SwiGLU is clamped (gate ≤ limit, |up| ≤ limit, gate·σ(α·gate)·(up + 1)), with biases.

The experts are stored as one tensor per layer: ``gate_up_proj`` (E, d, 2f) with gate and up interleaved
(columns 0, 2, 4, … the gate), ``down_proj`` (E, f, d). OpenAI's MXFP4 release stores them as 4-bit blocks and
scales (``…_blocks`` / ``…_scales``): those are refused by name."""

from __future__ import annotations

from model.config import TransformerConfig
from model.errors import CheckpointError
from model.io.families.common import need
from model.io.families.llama import LAYER_MAP, _head, llama_config, loader, map_llama_weights
from model.io.families.moe import moe_family, router
from model.io.report import Ledger

ATTENTION_MAP = {k: v for k, v in LAYER_MAP.items() if not k.startswith("mlp.")}


def gpt_oss_config(raw, own_head: bool = False) -> TransformerConfig:
    limit, alpha = raw.get("swiglu_limit", 7.0), raw.get("swiglu_alpha", 1.702)
    for key, value in (("swiglu_limit", limit), ("swiglu_alpha", alpha)):
        if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0:
            raise CheckpointError(f"config.json's {key} must be a positive number, got {value!r}")
    return llama_config(
        raw,
        window=raw.get("sliding_window"),
        bias=bool(raw.get("attention_bias", True)),
        attn_sinks=True,
        activation="swiglu_oss",
        swiglu_limit=float(limit),
        swiglu_alpha=float(alpha),
        n_experts=need(raw, "num_local_experts"),
        experts_per_token=need(raw, "num_experts_per_tok"),
        router_bias=True,
        expert_bias=True,
        tie_lm_head=not own_head,
    )


def weights(led: Ledger, cfg: TransformerConfig) -> dict:
    packed = [n for n in led.pending() if n.endswith(("_blocks", "_scales"))]
    if packed:
        raise CheckpointError(
            f"this gpt-oss folder stores its experts in MXFP4 ({packed[0]}); Attention Lab reads them unquantised: "
            "save the model again with transformers after loading it in bfloat16 (dequantised), then open that folder"
        )
    out = map_llama_weights(led, cfg, ATTENTION_MAP)
    for i in range(cfg.n_layers):
        out[f"blocks.{i}.attn.sinks"] = _need(led, f"layers.{i}.self_attn.sinks")  # (H,)
        out |= router(led, i, f"layers.{i}.mlp.router")
        experts = f"layers.{i}.mlp.experts."
        gate_up = _need(led, experts + "gate_up_proj")  # (E, d, 2f): gate and up interleaved
        bias = _need(led, experts + "gate_up_proj_bias")  # (E, 2f)
        down = _need(led, experts + "down_proj")  # (E, f, d)
        ours = f"blocks.{i}.ff.experts."
        out[ours + "gate"] = gate_up[..., ::2].transpose(1, 2).contiguous()  # (E, f, d)
        out[ours + "up"] = gate_up[..., 1::2].transpose(1, 2).contiguous()  # (E, f, d)
        out[ours + "gate_bias"], out[ours + "up_bias"] = bias[:, ::2].contiguous(), bias[:, 1::2].contiguous()
        out[ours + "down"] = down.transpose(1, 2).contiguous()  # (E, d, f)
        out[ours + "down_bias"] = _need(led, experts + "down_proj_bias")  # (E, d)
    return out


def _need(led: Ledger, name: str):
    if name not in led:
        raise CheckpointError(f"a gpt-oss folder holds {name}; this one does not")
    return led.take(name)


def _family(cfg: TransformerConfig) -> str:
    pattern = f"{cfg.layer_types.count('sliding')} of {cfg.n_layers} layers sliding" if cfg.layer_types else "no window"
    return f"gpt-oss (learned attention sinks, {moe_family(cfg)}, clamped SwiGLU; {pattern}; {_head(cfg)})"


load = loader(lambda src, own: gpt_oss_config(src.raw, own), _family, weights=weights)
