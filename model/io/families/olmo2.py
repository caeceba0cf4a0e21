"""OLMo 2 folders (``model_type: olmo2``): LLaMA with its norms moved onto the sublayers' outputs — x +
N(attn(x)), then x + N(mlp(x)): what a sublayer reads is the stream as it is — and QK-norm over the whole
projection (an RMSNorm of H·d_k for q and of H_kv·d_k for k, before the heads are split and before RoPE)."""

from __future__ import annotations

from model.config import TransformerConfig
from model.io.families.llama import LAYER_MAP, _head, llama_config, loader, map_llama_weights

OLMO2_MAP = {
    **{k: v for k, v in LAYER_MAP.items() if k not in ("input_layernorm", "post_attention_layernorm")},
    "post_attention_layernorm": "ln1_post",  # after attention, before the residual add (no norm before it)
    "post_feedforward_layernorm": "ln2_post",
    "self_attn.q_norm": "attn.q_norm",
    "self_attn.k_norm": "attn.k_norm",
}


def olmo2_config(raw, own_head: bool = False) -> TransformerConfig:
    return llama_config(
        raw,
        input_norms=False,
        sandwich_norm=True,
        qk_norm=True,
        qk_norm_scope="all",
        tie_lm_head=not own_head,
    )


load = loader(
    lambda src, own: olmo2_config(src.raw, own),
    lambda cfg: f"OLMo 2 (norms on the sublayers' outputs, QK-norm over the whole projection; {_head(cfg)})",
    weights=lambda led, cfg: map_llama_weights(led, cfg, OLMO2_MAP),
)
