"""The checks every :class:`model.config.TransformerConfig` passes when built, its exact parameter count, and the
parsing of untrusted config data (unknown keys and wrong types raise ValueError)."""

from __future__ import annotations

import dataclasses
from typing import Any

#: Largest model the project agrees to build; checked before any memory is allocated,
#: so a hostile config cannot make the server allocate gigabytes.
MAX_PARAMETERS = 400_000_000
MAX_SEQ_LEN_LIMIT = 65_536


def check(cfg) -> None:
    """Raise ValueError, naming the field and what would fix it, for a config the model cannot be built from."""
    if cfg.shared_layers and (cfg.n_experts or cfg.layer_types or cfg.nope_layers or cfg.cross_attention):
        raise ValueError("shared layers are one block run n_layers times: no per-layer experts, windows or NoPE")
    if cfg.cross_attention and (cfg.parallel_residual or cfg.sandwich_norm):
        raise ValueError("cross-attention is built for plain pre- or post-norm blocks")
    for name in (
        "layer_types",
        "rope_short_factor",
        "rope_long_factor",
        "nope_layers",
        "moe_layers",
    ):  # tuples stay hashable
        if isinstance(getattr(cfg, name), list):
            object.__setattr__(cfg, name, tuple(getattr(cfg, name)))
    if cfg.layer_types and (len(cfg.layer_types) != cfg.n_layers or set(cfg.layer_types) - {"global", "sliding"}):
        raise ValueError(
            f"layer_types must name 'global' or 'sliding' for each of the {cfg.n_layers} layers, got "
            f"{list(cfg.layer_types)}"
        )
    if "sliding" in cfg.layer_types and not (isinstance(cfg.sliding_window, int) and cfg.sliding_window >= 1):
        raise ValueError(f"sliding layers need sliding_window ≥ 1, got {cfg.sliding_window!r}")
    if isinstance(cfg.position_offset, bool) or not isinstance(cfg.position_offset, int) or cfg.position_offset < 0:
        raise ValueError(f"position_offset must be a non-negative integer, got {cfg.position_offset!r}")
    ints = (
        "vocab_size",
        "d_model",
        "n_heads",
        "n_layers",
        "d_ff",
        "max_seq_len",
        "n_token_types",
        "n_kv_heads",
        "rotary_dim",
        "head_dim",
        "embedding_size",
        "rel_buckets",
        "rel_max_distance",
        "rel_span",
        "rel_log_buckets",
        "rel_log_max",
    )
    for name in ints:
        value = getattr(cfg, name)
        if isinstance(value, bool) or not isinstance(value, int):
            raise ValueError(f"{name} must be an integer, got {value!r}")
    for name in ("vocab_size", "d_model", "n_heads", "n_layers", "d_ff", "max_seq_len"):
        if getattr(cfg, name) < 1:
            raise ValueError(f"{name} must be at least 1, got {getattr(cfg, name)}")
    if cfg.n_token_types < 0:
        raise ValueError("n_token_types must be 0 (off) or positive")
    if cfg.relative_bias and (cfg.rel_buckets < 4 or cfg.rel_max_distance < cfg.rel_buckets // 2):
        raise ValueError(
            f"a relative bias needs rel_buckets ≥ 4 and rel_max_distance ≥ rel_buckets / 2, got {cfg.rel_buckets} "
            f"and {cfg.rel_max_distance}"
        )
    if cfg.relative_bias and (cfg.attn_softcap or cfg.attn_sinks):
        raise ValueError("a relative bias is not combined with capped scores or sinks")
    if cfg.disentangled:
        from model.disentangled import TERMS

        if set(cfg.disentangled) - set(TERMS) or cfg.rel_span < 1 or cfg.causal or cfg.relative_bias:
            raise ValueError(
                f"disentangled attention names terms among {TERMS} (got {list(cfg.disentangled)}), needs rel_span ≥ 1 "
                "and is an encoder's without another relative bias"
            )
    if cfg.embedding_size < 0:
        raise ValueError(f"embedding_size must be 0 (d_model) or positive, got {cfg.embedding_size}")
    if cfg.embedding_size and cfg.lm_head:
        raise ValueError("a next-token head reads the embeddings back: it needs embedding_size 0 (no projection)")
    if cfg.head_dim < 0:
        raise ValueError(f"head_dim must be 0 (d_model // n_heads) or positive, got {cfg.head_dim}")
    if not cfg.head_dim and cfg.d_model % cfg.n_heads:
        raise ValueError(
            f"d_model ({cfg.d_model}) must be divisible by n_heads ({cfg.n_heads}); "
            f"try n_heads in {[h for h in range(1, 17) if cfg.d_model % h == 0]}"
        )
    if cfg.n_kv_heads < 0 or (cfg.n_kv_heads and cfg.n_heads % cfg.n_kv_heads):
        raise ValueError(
            f"n_kv_heads ({cfg.n_kv_heads}) must divide n_heads ({cfg.n_heads}) so every key/value head "
            f"serves the same number of query heads; use 0 for one per query head"
        )
    if cfg.norm_kind not in ("layernorm", "rmsnorm"):
        raise ValueError(f"norm_kind must be 'layernorm' or 'rmsnorm', got {cfg.norm_kind!r}")
    if cfg.rope_style not in ("interleaved", "half"):
        raise ValueError(f"rope_style must be 'interleaved' or 'half', got {cfg.rope_style!r}")
    if cfg.mlm_activation not in ("gelu", "gelu_tanh", "relu"):
        raise ValueError(f"mlm_activation must be gelu, gelu_tanh or relu; got {cfg.mlm_activation!r}")
    if cfg.mlm_head and cfg.lm_head:
        raise ValueError("a model has either a masked-language-model head or a next-token head, not both")
    if cfg.norm not in ("pre", "post"):
        raise ValueError(f"norm must be 'pre' or 'post', got {cfg.norm!r}")
    if cfg.positional not in ("sinusoidal", "learned", "rope", "none"):
        raise ValueError(f"positional must be one of sinusoidal, learned, rope, none; got {cfg.positional!r}")
    if cfg.activation not in ("gelu", "gelu_tanh", "relu", "swiglu", "geglu", "geglu_tanh", "swiglu_oss"):
        raise ValueError(
            f"activation must be gelu, gelu_tanh, relu, swiglu, geglu, geglu_tanh or swiglu_oss; got {cfg.activation!r}"
        )
    if cfg.sandwich_norm and (cfg.norm != "pre" or cfg.parallel_residual):
        raise ValueError("sandwich norms wrap pre-norm sublayers: they need norm='pre' and no parallel residual")
    for name in ("attn_scale", "rope_local_base", "logit_softcap", "attn_softcap", "norm_offset"):
        value = getattr(cfg, name)
        if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
            raise ValueError(f"{name} must be a non-negative number, got {value!r}")
    for name in ("embed_multiplier", "residual_multiplier", "logit_divisor"):
        value = getattr(cfg, name)
        if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0:
            raise ValueError(f"{name} must be a positive number, got {value!r}")
    _check_moe(cfg)
    if cfg.nope_layers:
        if cfg.positional != "rope":
            raise ValueError("nope_layers names layers without RoPE: it needs positional='rope'")
        if any(isinstance(i, bool) or not isinstance(i, int) or not 0 <= i < cfg.n_layers for i in cfg.nope_layers):
            raise ValueError(f"nope_layers must list layers 0 … {cfg.n_layers - 1}, got {list(cfg.nope_layers)}")
    if not cfg.input_norms and not cfg.sandwich_norm:
        raise ValueError("input_norms=False leaves only the norms on the sublayers' outputs: it needs sandwich_norm")
    if cfg.qk_norm_scope not in ("head", "all"):
        raise ValueError(f"qk_norm_scope must be 'head' or 'all', got {cfg.qk_norm_scope!r}")
    if cfg.rotary_dim < 0 or cfg.rotary_dim > cfg.d_k or cfg.rotary_dim % 2:
        raise ValueError(f"rotary_dim must be an even number from 0 to d_k = {cfg.d_k}, got {cfg.rotary_dim}")
    if cfg.rope_scaling:
        from model.rope_scaling import check

        check(cfg.rope_spec, cfg.rope_dims)
    if cfg.parallel_residual and cfg.norm != "pre":
        raise ValueError("a parallel residual reads the normalised input of the block: it needs norm='pre'")
    if cfg.positional == "rope" and cfg.d_k % 2:
        raise ValueError(
            f"RoPE rotates pairs of dimensions, so d_k = d_model / n_heads must be even "
            f"(got {cfg.d_k}); change d_model or n_heads"
        )
    if cfg.positional == "sinusoidal" and cfg.d_model % 2:
        raise ValueError(f"sinusoidal encoding needs an even d_model, got {cfg.d_model}")
    if not 0.0 <= float(cfg.dropout) < 1.0:
        raise ValueError(f"dropout must be in [0, 1), got {cfg.dropout}")
    if not float(cfg.layer_norm_eps) > 0:
        raise ValueError("layer_norm_eps must be positive")
    if not 0 <= cfg.pad_token_id < cfg.vocab_size:
        raise ValueError(f"pad_token_id {cfg.pad_token_id} is outside the vocabulary")
    if cfg.max_seq_len > MAX_SEQ_LEN_LIMIT:
        raise ValueError(f"max_seq_len {cfg.max_seq_len} is above the limit {MAX_SEQ_LEN_LIMIT}")
    if cfg.parameter_count() > MAX_PARAMETERS:
        raise ValueError(
            f"this config has {cfg.parameter_count():,} parameters, above the limit "
            f"{MAX_PARAMETERS:,}; reduce d_model, d_ff, n_layers or vocab_size"
        )


def _check_moe(cfg) -> None:
    ints = ("n_experts", "experts_per_token", "moe_d_ff")
    if any(isinstance(getattr(cfg, n), bool) or not isinstance(getattr(cfg, n), int) for n in ints):
        raise ValueError("n_experts, experts_per_token and moe_d_ff must be integers")
    if not cfg.n_experts:
        if cfg.moe_layers or cfg.experts_per_token:
            raise ValueError("moe_layers and experts_per_token need n_experts > 0")
        return
    if not 1 <= cfg.experts_per_token <= cfg.n_experts or cfg.n_experts > 1024:
        raise ValueError(
            f"experts_per_token must be 1 … n_experts ({cfg.n_experts}, at most 1024), got {cfg.experts_per_token}"
        )
    if any(isinstance(i, bool) or not isinstance(i, int) or not 0 <= i < cfg.n_layers for i in cfg.moe_layers):
        raise ValueError(f"moe_layers must list layers 0 … {cfg.n_layers - 1}, got {list(cfg.moe_layers)}")
    if not cfg.gated:
        raise ValueError("experts are gated feed-forwards (swiglu, geglu, swiglu_oss); set activation to one")
    if cfg.moe_d_ff < 0 or cfg.attn_only or cfg.parallel_residual:
        raise ValueError("experts need a feed-forward sublayer of their own (no attn_only, no parallel residual)")


def parameter_count(cfg) -> int:
    """Exact number of parameters, computed without building the model."""
    d, f = cfg.d_model, cfg.d_ff
    kv = cfg.kv_heads * cfg.d_k
    a = cfg.attn_width
    attn = 2 * d * a + 2 * d * kv + ((a + 2 * kv) if cfg.bias else 0) + (d if cfg.use_o_bias else 0)
    gated = cfg.gated
    ff = (3 if gated else 2) * d * f + (((2 if gated else 1) * f + d) if cfg.ff_bias else 0)
    norm = d if cfg.norm_kind == "rmsnorm" else 2 * d
    qk_width = (a + kv) if cfg.qk_norm_scope == "all" else 2 * cfg.d_k  # q's norm and k's
    qk = (qk_width if cfg.norm_kind == "rmsnorm" else 2 * qk_width) if cfg.qk_norm else 0
    cross = attn + (d if cfg.norm_kind == "rmsnorm" else 2 * d)  # cross-attention: the same projections, a norm
    attn += cfg.n_heads if cfg.attn_sinks else 0
    moe = sum(cfg.is_moe(i) for i in range(cfg.n_layers))
    experts = cfg.n_experts * (3 * d * cfg.expert_width + ((2 * cfg.expert_width + d) if cfg.expert_bias else 0))
    router = cfg.n_experts * d + (cfg.n_experts if cfg.router_bias else 0)
    moe_extra = moe * (experts + router - ff)  # a mixture's layers hold experts and a router instead of one FF
    e = cfg.embed_width
    block = attn + ff + ((2 if cfg.input_norms else 0) + (2 if cfg.sandwich_norm else 0)) * norm + qk
    emb = cfg.vocab_size * e + cfg.n_token_types * e - (0 if cfg.first_attn_norm or not cfg.input_norms else norm)
    if cfg.positional == "learned":
        emb += (cfg.max_seq_len + cfg.position_offset) * e
    if cfg.embedding_layer_norm:
        emb += e if cfg.norm_kind == "rmsnorm" else 2 * e
    if cfg.embedding_size:
        emb += e * d + d  # the projection to d_model
    final = norm if cfg.use_final_layer_norm else 0
    head = (d * e + e + 2 * e + cfg.vocab_size) if cfg.mlm_head else 0
    if cfg.mlm_head and not cfg.tie_mlm_head:
        head += cfg.vocab_size * e
    if cfg.lm_head and not cfg.tie_lm_head:
        head += cfg.vocab_size * d  # a tied LM head has no parameters of its own
    head += cfg.vocab_size if cfg.lm_head and cfg.lm_bias else 0
    layers = 1 if cfg.shared_layers else cfg.n_layers
    rel = cfg.rel_buckets * cfg.n_heads if cfg.relative_bias else 0  # one table, shared by the layers
    if cfg.disentangled:  # DeBERTa: the relative embeddings (and their norm), each layer's own position projections
        rel += 2 * cfg.rel_span * d + (2 * d if cfg.rel_norm else 0)
        block += 0 if cfg.share_att_key else len(set(cfg.disentangled)) * (d * a + a)
    if cfg.cross_attention:  # queries from the stream, keys and values from the encoder's output, and its norm
        block += cross
    return emb + rel + layers * block + moe_extra + final + head


def parse(cls, data: Any) -> dict[str, Any]:
    """The fields of ``cls`` from untrusted ``data`` (a JSON object), checked and converted."""
    if not isinstance(data, dict):
        raise ValueError(f"config must be a JSON object, got {type(data).__name__}")
    names = {f.name: f for f in dataclasses.fields(cls)}
    unknown = sorted(set(data) - set(names))
    if unknown:
        raise ValueError(f"unknown config keys: {', '.join(unknown)}")
    clean: dict[str, Any] = {}
    for key, value in data.items():
        default = names[key].default
        if isinstance(default, bool) or key in ("final_layer_norm", "o_bias"):
            if value is not None and not isinstance(value, bool):
                raise ValueError(f"{key} must be true or false, got {value!r}")
        elif isinstance(default, float):
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise ValueError(f"{key} must be a number, got {value!r}")
            value = float(value)
        elif isinstance(default, str) and not isinstance(value, str):
            raise ValueError(f"{key} must be a string, got {value!r}")
        elif key in ("rope_short_factor", "rope_long_factor"):
            if not isinstance(value, list | tuple) or any(
                isinstance(v, bool) or not isinstance(v, int | float) for v in value
            ):
                raise ValueError(f"{key} must be a list of numbers, got {value!r}")
            value = tuple(float(v) for v in value)
        elif key in ("nope_layers", "moe_layers"):
            if not isinstance(value, list | tuple) or any(isinstance(v, bool) or not isinstance(v, int) for v in value):
                raise ValueError(f"{key} must be a list of layer numbers, got {value!r}")
            value = tuple(value)
        elif isinstance(default, tuple):
            if not isinstance(value, list | tuple) or not all(isinstance(v, str) for v in value):
                raise ValueError(f"{key} must be a list of strings, got {value!r}")
            value = tuple(value)
        clean[key] = value
    return clean
