"""LLaMA-architecture folders (``model_type: llama``), and the base of Mistral and Qwen2: pre-norm RMSNorm blocks,
SwiGLU, grouped-query attention, rotate-half RoPE, a causal mask and a next-token head that is the token embeddings
or a matrix of its own — decided from the tensors, as transformers 5 decides (a ``lm_head.weight`` that differs from
the embeddings is the model's own, whatever ``tie_word_embeddings`` says)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from types import SimpleNamespace
from typing import Any

from model.config import TransformerConfig
from model.errors import CheckpointError
from model.io.families.common import Folder, config, family_loader, head_is_own, layer_types, need, rename, rope_fields
from model.io.report import Ledger

ANCHOR = "embed_tokens.weight"

# HF name (below "model.layers.{i}.") -> ours (below "blocks.{i}.")
LAYER_MAP = {
    "self_attn.q_proj": "attn.w_q",
    "self_attn.k_proj": "attn.w_k",
    "self_attn.v_proj": "attn.w_v",
    "self_attn.o_proj": "attn.w_o",
    "mlp.gate_proj": "ff.gate",
    "mlp.up_proj": "ff.fc1",
    "mlp.down_proj": "ff.fc2",
    "input_layernorm": "ln1",
    "post_attention_layernorm": "ln2",
}
TOP_MAP = {"embed_tokens.weight": "tok_emb.weight", "norm.weight": "ln_f.weight"}


def _reach(raw: Mapping[str, Any]) -> int:
    """How many times its max_position_embeddings a model reads: dynamic NTK RoPE scales beyond it."""
    params = raw.get("rope_parameters") or raw.get("rope_scaling") or {}
    if isinstance(params, dict) and params.get("rope_type", params.get("type")) == "dynamic":
        factor = params.get("factor")
        return max(1, int(factor)) if isinstance(factor, int | float) and not isinstance(factor, bool) else 1
    return 1


def llama_config(raw: Mapping[str, Any], *, window: int | None = None, **overrides: Any) -> TransformerConfig:
    """The from-scratch config of a LLaMA-like config.json; ``overrides`` are a family's differences."""
    d, heads = need(raw, "hidden_size"), need(raw, "num_attention_heads")
    n_layers = need(raw, "num_hidden_layers")
    if raw.get("hidden_act", "silu") != "silu":
        raise CheckpointError(f"hidden_act {raw.get('hidden_act')!r}: LLaMA-style models use silu (SwiGLU)")
    head_dim = raw.get("head_dim") or d // heads
    if not isinstance(head_dim, int) or head_dim < 1:
        raise CheckpointError(f"invalid head_dim {head_dim!r}")
    types, w = layer_types(raw, n_layers, window)
    fields = dict(
        vocab_size=need(raw, "vocab_size"),
        d_model=d,
        n_heads=heads,
        n_kv_heads=raw.get("num_key_value_heads") or heads,
        n_layers=n_layers,
        head_dim=0 if head_dim * heads == d else head_dim,  # Qwen3, Gemma: heads need not tile d_model
        d_ff=need(raw, "intermediate_size"),
        max_seq_len=min(need(raw, "max_position_embeddings") * _reach(raw), 65_536),
        norm="pre",
        norm_kind="rmsnorm",
        activation="swiglu",
        positional="rope",
        rope_style="half",
        **rope_fields(raw),
        bias=bool(raw.get("attention_bias", False)),
        ff_bias=bool(raw.get("mlp_bias", False)),
        layer_norm_eps=float(raw.get("rms_norm_eps", 1e-6)),
        scale_embeddings=False,
        final_layer_norm=True,
        causal=True,
        lm_head=True,
        tie_lm_head=bool(raw.get("tie_word_embeddings", False)),
        layer_types=types,
        sliding_window=w,
    )
    pad = raw.get("pad_token_id")
    fields["pad_token_id"] = pad if isinstance(pad, int) and 0 <= pad < fields["vocab_size"] else 0
    return config(**{**fields, **overrides})


def own_head(src: Folder, tied_by_default: bool = False) -> bool:
    """Whether the next-token head is a matrix of its own (see :func:`head_is_own`)."""
    tied = src.raw.get("tie_word_embeddings", tied_by_default) is not False
    return head_is_own(src, "lm_head.weight", "embed_tokens.weight", tied)


def map_llama_weights(led: Ledger, cfg: TransformerConfig, layer_map: Mapping[str, str] = LAYER_MAP) -> dict:
    top = dict(TOP_MAP) | ({} if cfg.tie_lm_head else {"lm_head.weight": "lm_head.weight"})
    return rename(led, cfg.n_layers, top, layer_map, "layers.{i}.")


def loader(
    make_config: Callable[[Folder, bool], TransformerConfig],
    family: str | Callable[[TransformerConfig], str],
    *,
    tied_by_default: bool = False,
    weights: Callable[[Ledger, TransformerConfig], dict] = map_llama_weights,
):
    """A LLaMA-like family's ``load``: the head decided from the tensors, the config, the weights taken."""

    def make(src: Folder):
        cfg = make_config(src, own_head(src, tied_by_default))
        return cfg, weights(src.ledger, cfg), family(cfg) if callable(family) else family

    return family_loader(ANCHOR, "model.", make, lambda raw: make_config(SimpleNamespace(raw=raw), False))


def _head(cfg: TransformerConfig) -> str:
    return "tied head" if cfg.tie_lm_head else "its own head"


load = loader(
    lambda src, own: llama_config(src.raw, tie_lm_head=not own),
    lambda cfg: f"LLaMA (pre-norm RMSNorm, SwiGLU, RoPE, GQA; {_head(cfg)})",
)
