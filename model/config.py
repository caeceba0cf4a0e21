"""The one configuration object for the from-scratch transformer: classic encoders and LLaMA-style decoders."""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from typing import Any, Literal

from model.config_checks import MAX_PARAMETERS, MAX_SEQ_LEN_LIMIT  # noqa: F401  (re-exported)

NormPlacement = Literal["pre", "post"]
PositionalKind = Literal["sinusoidal", "learned", "rope", "none"]
Activation = Literal["gelu", "gelu_tanh", "relu", "swiglu", "geglu", "geglu_tanh", "swiglu_oss"]
NormKind = Literal["layernorm", "rmsnorm"]
RopeStyle = Literal["interleaved", "half"]


@dataclass(frozen=True)
class TransformerConfig:
    """Every architectural choice of :class:`model.transformer.Transformer`.

    The defaults are the classic encoder (Vaswani et al. with pre-norm). A LLaMA-style decoder such as
    SmolLM2 is the same class with ``norm_kind="rmsnorm"``, ``activation="swiglu"``, ``n_kv_heads`` < ``n_heads``
    (grouped-query attention), ``positional="rope"``, ``causal=True`` and ``lm_head=True``.
    """

    vocab_size: int = 32000  # rows of the token-embedding table
    d_model: int = 256  # width of the residual stream
    n_heads: int = 4  # attention heads per layer; d_k = d_model // n_heads unless head_dim says otherwise
    n_layers: int = 4  # encoder blocks
    d_ff: int = 1024  # hidden width of the feed-forward sublayer
    max_seq_len: int = 512  # longest input; sets learned-position table size
    dropout: float = 0.1  # used only in train() mode; the dashboard runs eval()
    norm: NormPlacement = "pre"  # "pre": x + f(LN(x)) (stable); "post": LN(x + f(x)) (BERT)
    positional: PositionalKind = "sinusoidal"  # how order enters the model
    activation: Activation = "gelu"  # feed-forward kind; "gelu" is the exact erf form; "swiglu" is gated (LLaMA)
    norm_kind: NormKind = "layernorm"  # "rmsnorm": scale by the root mean square only (LLaMA)
    n_kv_heads: int = 0  # key/value heads, each shared by n_heads / n_kv_heads query heads (GQA); 0: = n_heads
    bias: bool = False  # biases on the Q/K/V/O projections
    ff_bias: bool = True  # biases in the feed-forward layers
    layer_norm_eps: float = 1e-5
    scale_embeddings: bool = True  # multiply token embeddings by sqrt(d_model) (Vaswani et al.)
    n_token_types: int = 0  # > 0 adds BERT-style segment embeddings
    embedding_layer_norm: bool = False  # LayerNorm right after the embedding sum (BERT)
    final_layer_norm: bool | None = None  # None: on for pre-norm, off for post-norm
    causal: bool = False  # each token attends only to itself and earlier tokens
    mlm_head: bool = False  # add a masked-language-model head: dense -> activation -> LayerNorm -> vocabulary
    mlm_activation: Activation = "gelu"  # the MLM head's activation (BERT: its hidden_act; RoBERTa: exact GELU)
    tie_mlm_head: bool = True  # the MLM head's vocabulary matrix is the token embeddings; False: its own (V, d_model)
    lm_head: bool = False  # next-token logits = final hidden state @ token embeddings (tied, no bias)
    pad_token_id: int = 0
    rope_base: float = 10000.0  # θ of RoPE
    rope_style: RopeStyle = "interleaved"  # pairs RoPE rotates: (2i, 2i+1), or (i, i + d_k/2) as in HF LLaMA
    layer_types: tuple[str, ...] = ()  # per layer "global" or "sliding" (sees sliding_window keys); (): all global
    sliding_window: int = 0  # a sliding layer's window: causal, the w latest keys (itself too); else |i − j| ≤ w // 2
    o_bias: bool | None = None  # a bias on W_o; None: as `bias` (Qwen2 biases q, k and v but not o)
    tie_lm_head: bool = True  # next-token logits through the token embeddings; False: their own lm_head matrix
    lm_bias: bool = False  # a bias per token added to the next-token logits (BART's final_logits_bias)
    position_offset: int = 0  # learned positions start at this row of the table (RoBERTa: padding_idx + 1)
    rotary_dim: int = 0  # RoPE rotates the first rotary_dim dimensions of each head (GPT-NeoX: d_k / 4); 0: all
    qk_norm: bool = False  # RMSNorm over each head's q and k before RoPE (Qwen3, Gemma 3)
    parallel_residual: bool = False  # x + attn(LN1(x)) + FF(LN2(x)): both sublayers read x (GPT-NeoX, Pythia)
    sandwich_norm: bool = False  # a norm after each sublayer too: x + N(attn(LN(x))) (Gemma 2 and 3)
    norm_offset: float = 0.0  # RMSNorm scales by (offset + weight): Gemma's weights are stored around 0, offset 1
    attn_scale: float = 0.0  # q·k is multiplied by this when scaled; 0: 1/√d_k (Gemma: query_pre_attn_scalar^-½)
    rope_local_base: float = 0.0  # θ of RoPE on sliding layers (Gemma 3: 10,000 locally, 1e6 globally); 0: rope_base
    # scaled RoPE (model/rope_scaling.py): "linear", "dynamic", "llama3", "yarn", "longrope", "factors"; "": none
    rope_scaling: str = ""
    rope_factor: float = 1.0  # how much longer than the original context the model reads
    rope_original_max: int = 0  # the original context (dynamic: positions read unscaled)
    rope_low_freq_factor: float = 1.0  # llama3: wavelengths beyond original / low are divided by the factor…
    rope_high_freq_factor: float = 4.0  # …those below original / high kept, the ones between smoothed
    rope_beta_fast: float = 32.0  # yarn: the ramp between kept and interpolated frequencies
    rope_beta_slow: float = 1.0
    rope_yarn_truncate: bool = True
    rope_attention_factor: float = 0.0  # yarn, longrope: cos and sin scaled by it; 0: derived from the factor
    rope_mscale: float = 0.0  # yarn's attention factor from two mscales (DeepSeek-style configs)
    rope_mscale_all_dim: float = 0.0
    rope_short_factor: tuple[float, ...] = ()  # longrope: a divisor per rotated pair up to the original context
    rope_long_factor: tuple[float, ...] = ()  # …and beyond it
    logit_softcap: float = 0.0  # next-token logits become c·tanh(logits / c) (Gemma 2); 0: off
    attn_softcap: float = 0.0  # attention scores become c·tanh(s / c) before the mask and softmax (Gemma 2); 0: off
    head_dim: int = 0  # width of one head; 0: d_model // n_heads (Qwen3 and Gemma set it apart: H·d_k ≠ d_model)
    first_attn_norm: bool = True  # False: layer 0's attention reads the stream as it is (ModernBERT: its
    #                               embeddings end in a norm already)
    nope_layers: tuple[int, ...] = ()  # layers whose attention gets no RoPE: no positions at all (SmolLM3's NoPE)
    input_norms: bool = True  # False: the sublayers read the stream as it is, only their outputs are normed
    #                           (OLMo 2: x + N(attn(x)), with sandwich_norm)
    qk_norm_scope: str = "head"  # QK-norm over each head's d_k ("head": Qwen3, Gemma 3) or the whole projection
    #                              ("all": OLMo 2, an RMSNorm of H·d_k for q and of H_kv·d_k for k)
    embed_multiplier: float = 1.0  # token embeddings × this (Granite's embedding_multiplier), after any √d_model
    residual_multiplier: float = 1.0  # each sublayer's output × this as it joins the stream (Granite)
    logit_divisor: float = 1.0  # next-token logits ÷ this (Granite's logits_scaling), before any soft cap
    attn_sinks: bool = False  # a learned logit per head in every row's softmax that belongs to no token (gpt-oss):
    #                           the weights on the tokens sum to less than 1
    swiglu_limit: float = 7.0  # swiglu_oss (gpt-oss): the gate clamped at ≤ limit and up at ±limit…
    swiglu_alpha: float = 1.702  # …and gate · σ(alpha · gate) · (up + 1)
    # mixture of experts (model/moe.py): a router picks experts_per_token of n_experts feed-forwards per token
    n_experts: int = 0  # 0: every feed-forward is dense
    experts_per_token: int = 0  # top-k
    moe_layers: tuple[int, ...] = ()  # the layers whose feed-forward is a mixture; (): every layer (Qwen3-MoE: some)
    moe_d_ff: int = 0  # one expert's hidden width; 0: d_ff (Qwen3-MoE's experts are narrower than its dense layers)
    router_norm_topk: bool = True  # the chosen experts' softmax weights renormalised to sum to 1 (Mixtral, gpt-oss)
    router_bias: bool = False  # a bias on the router's logits (gpt-oss)
    expert_bias: bool = False  # biases in the experts' projections (gpt-oss)
    cross_attention: bool = False  # each block also attends to an encoder's output (the decoder of Vaswani et al.)
    embedding_size: int = 0  # width of the token, position and type embeddings and their norm, projected to d_model
    #                          by one linear layer (ELECTRA, ALBERT); the MLM head narrows back to it; 0: d_model,
    #                          no projection
    shared_layers: bool = False  # every layer is layer 0's weights, run n_layers times (ALBERT)
    # a learned bias per head and bucketed relative position, added to every self-attention score and shared by all
    # layers (T5, MPNet): exact distances up to rel_buckets / 4 (each side), log-spaced to rel_max_distance beyond
    relative_bias: bool = False
    rel_buckets: int = 32
    rel_max_distance: int = 128
    # DeBERTa's disentangled attention (model/disentangled.py): position terms of their own in every layer's scores,
    # "c2p" (content→position) and/or "p2c" (position→content), from 2·rel_span shared relative embeddings
    disentangled: tuple[str, ...] = ()
    rel_span: int = 0  # relative distances each side with an embedding (position_buckets, or max_relative_positions)
    rel_log_buckets: int = 0  # > 0: distances log-bucketed into this many (DeBERTa-v3's position_buckets); 0: clamped
    rel_log_max: int = 0  # the distance the log buckets reach (max_relative_positions)
    share_att_key: bool = False  # the position terms go through the layer's own W_q and W_k (DeBERTa-v3)
    rel_norm: bool = False  # a LayerNorm on the relative embeddings (norm_rel_ebd: layer_norm)
    attn_only: bool = False  # no feed-forward sublayer (and no norm before it): the attention-only toy models of
    #                          Elhage et al. (2021) and Olsson et al. (2022); its hooks still fire, with zeros

    def __post_init__(self) -> None:
        from model.config_checks import check

        check(self)

    @property
    def d_k(self) -> int:
        """Width of one head."""
        return self.head_dim or self.d_model // self.n_heads

    @property
    def embed_width(self) -> int:
        """Width of the embedding tables (d_model unless embedding_size narrows them)."""
        return self.embedding_size or self.d_model

    @property
    def attn_width(self) -> int:
        """H·d_k: what W_q writes and W_o reads (d_model unless head_dim is set apart)."""
        return self.n_heads * self.d_k

    @property
    def kv_heads(self) -> int:
        """Key/value heads per layer (= n_heads without grouped-query attention)."""
        return self.n_kv_heads or self.n_heads

    @property
    def group_size(self) -> int:
        """Query heads that share one key/value head."""
        return self.n_heads // self.kv_heads

    @property
    def is_decoder(self) -> bool:
        """A causal language model: predicts the next token."""
        return self.causal and self.lm_head

    @property
    def gated(self) -> bool:
        """A gated feed-forward: act(gate(x)) · up(x) (SwiGLU, GeGLU)."""
        return self.activation in ("swiglu", "geglu", "geglu_tanh", "swiglu_oss")

    def is_moe(self, layer: int) -> bool:
        """Is ``layer``'s feed-forward a mixture of experts (model/moe.py)?"""
        return bool(self.n_experts) and (not self.moe_layers or layer in self.moe_layers)

    @property
    def expert_width(self) -> int:
        """The hidden width of one expert."""
        return self.moe_d_ff or self.d_ff

    @property
    def rope_dims(self) -> int:
        """How many dimensions of each head RoPE rotates."""
        return self.rotary_dim or self.d_k

    @property
    def rope_spec(self):
        """The scaled RoPE's parameters (model.rope_scaling.RopeScaling), or None without scaling."""
        from model.rope_scaling import FIELDS, RopeScaling

        return RopeScaling(**{k: getattr(self, f) for k, f in FIELDS.items()}) if self.rope_scaling else None

    @property
    def use_o_bias(self) -> bool:
        return self.bias if self.o_bias is None else self.o_bias

    def is_sliding(self, layer: int) -> bool:
        """Does ``layer`` see only a window of keys (Mistral, Gemma's local layers, ModernBERT)?"""
        return bool(self.layer_types) and self.layer_types[layer] == "sliding"

    @property
    def not_read_whole(self) -> str:
        """What the whole-text reader (model/long.py, q and k only) does not carry yet, in words; "": nothing."""
        if self.attn_sinks:
            return "learned attention sinks"
        return (
            "a relative-position bias" if self.relative_bias else "DeBERTa's position terms" * bool(self.disentangled)
        )

    @property
    def windows(self) -> tuple[int, ...]:
        """Per layer: its sliding window, 0 for a global layer; () when every layer is global."""
        return tuple(self.sliding_window if self.is_sliding(i) else 0 for i in range(self.n_layers)) * bool(
            self.layer_types
        )

    @property
    def use_final_layer_norm(self) -> bool:
        return self.norm == "pre" if self.final_layer_norm is None else self.final_layer_norm

    def parameter_count(self) -> int:
        """Exact number of parameters, computed without building the model."""
        from model.config_checks import parameter_count

        return parameter_count(self)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), sort_keys=True)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> TransformerConfig:
        """Build a config from untrusted data: unknown keys and wrong types raise ValueError."""
        from model.config_checks import parse

        return cls(**parse(cls, data))

    def replace(self, **changes: Any) -> TransformerConfig:
        return dataclasses.replace(self, **changes)
