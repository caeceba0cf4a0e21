"""The one configuration object for the from-scratch transformer: classic encoders and LLaMA-style decoders."""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from typing import Any, Literal

NormPlacement = Literal["pre", "post"]
PositionalKind = Literal["sinusoidal", "learned", "rope", "none"]
Activation = Literal["gelu", "gelu_tanh", "relu", "swiglu", "geglu", "geglu_tanh"]
NormKind = Literal["layernorm", "rmsnorm"]
RopeStyle = Literal["interleaved", "half"]

#: Largest model the project agrees to build; checked before any memory is allocated,
#: so a hostile config cannot make the server allocate gigabytes.
MAX_PARAMETERS = 400_000_000
MAX_SEQ_LEN_LIMIT = 65_536


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
    cross_attention: bool = False  # each block also attends to an encoder's output (the decoder of Vaswani et al.)
    attn_only: bool = False  # no feed-forward sublayer (and no norm before it): the attention-only toy models of
    #                          Elhage et al. (2021) and Olsson et al. (2022); its hooks still fire, with zeros

    def __post_init__(self) -> None:
        if self.cross_attention and (self.parallel_residual or self.sandwich_norm):
            raise ValueError("cross-attention is built for plain pre- or post-norm blocks")
        for name in ("layer_types", "rope_short_factor", "rope_long_factor"):  # from JSON: tuples keep it hashable
            if isinstance(getattr(self, name), list):
                object.__setattr__(self, name, tuple(getattr(self, name)))
        if self.layer_types and (
            len(self.layer_types) != self.n_layers or set(self.layer_types) - {"global", "sliding"}
        ):
            raise ValueError(
                f"layer_types must name 'global' or 'sliding' for each of the {self.n_layers} layers, got "
                f"{list(self.layer_types)}"
            )
        if "sliding" in self.layer_types and not (isinstance(self.sliding_window, int) and self.sliding_window >= 1):
            raise ValueError(f"sliding layers need sliding_window ≥ 1, got {self.sliding_window!r}")
        if (
            isinstance(self.position_offset, bool)
            or not isinstance(self.position_offset, int)
            or self.position_offset < 0
        ):
            raise ValueError(f"position_offset must be a non-negative integer, got {self.position_offset!r}")
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
        )
        for name in ints:
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int):
                raise ValueError(f"{name} must be an integer, got {value!r}")
        for name in ("vocab_size", "d_model", "n_heads", "n_layers", "d_ff", "max_seq_len"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be at least 1, got {getattr(self, name)}")
        if self.n_token_types < 0:
            raise ValueError("n_token_types must be 0 (off) or positive")
        if self.head_dim < 0:
            raise ValueError(f"head_dim must be 0 (d_model // n_heads) or positive, got {self.head_dim}")
        if not self.head_dim and self.d_model % self.n_heads:
            raise ValueError(
                f"d_model ({self.d_model}) must be divisible by n_heads ({self.n_heads}); "
                f"try n_heads in {[h for h in range(1, 17) if self.d_model % h == 0]}"
            )
        if self.n_kv_heads < 0 or (self.n_kv_heads and self.n_heads % self.n_kv_heads):
            raise ValueError(
                f"n_kv_heads ({self.n_kv_heads}) must divide n_heads ({self.n_heads}) so every key/value head "
                f"serves the same number of query heads; use 0 for one per query head"
            )
        if self.norm_kind not in ("layernorm", "rmsnorm"):
            raise ValueError(f"norm_kind must be 'layernorm' or 'rmsnorm', got {self.norm_kind!r}")
        if self.rope_style not in ("interleaved", "half"):
            raise ValueError(f"rope_style must be 'interleaved' or 'half', got {self.rope_style!r}")
        if self.mlm_activation not in ("gelu", "gelu_tanh", "relu"):
            raise ValueError(f"mlm_activation must be gelu, gelu_tanh or relu; got {self.mlm_activation!r}")
        if self.mlm_head and self.lm_head:
            raise ValueError("a model has either a masked-language-model head or a next-token head, not both")
        if self.norm not in ("pre", "post"):
            raise ValueError(f"norm must be 'pre' or 'post', got {self.norm!r}")
        if self.positional not in ("sinusoidal", "learned", "rope", "none"):
            raise ValueError(f"positional must be one of sinusoidal, learned, rope, none; got {self.positional!r}")
        if self.activation not in ("gelu", "gelu_tanh", "relu", "swiglu", "geglu", "geglu_tanh"):
            raise ValueError(
                f"activation must be gelu, gelu_tanh, relu, swiglu, geglu or geglu_tanh; got {self.activation!r}"
            )
        if self.sandwich_norm and (self.norm != "pre" or self.parallel_residual):
            raise ValueError("sandwich norms wrap pre-norm sublayers: they need norm='pre' and no parallel residual")
        for name in ("attn_scale", "rope_local_base", "logit_softcap", "attn_softcap", "norm_offset"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
                raise ValueError(f"{name} must be a non-negative number, got {value!r}")
        if self.rotary_dim < 0 or self.rotary_dim > self.d_k or self.rotary_dim % 2:
            raise ValueError(f"rotary_dim must be an even number from 0 to d_k = {self.d_k}, got {self.rotary_dim}")
        if self.rope_scaling:
            from model.rope_scaling import check

            check(self.rope_spec, self.rope_dims)
        if self.parallel_residual and self.norm != "pre":
            raise ValueError("a parallel residual reads the normalised input of the block: it needs norm='pre'")
        if self.positional == "rope" and self.d_k % 2:
            raise ValueError(
                f"RoPE rotates pairs of dimensions, so d_k = d_model / n_heads must be even "
                f"(got {self.d_k}); change d_model or n_heads"
            )
        if self.positional == "sinusoidal" and self.d_model % 2:
            raise ValueError(f"sinusoidal encoding needs an even d_model, got {self.d_model}")
        if not 0.0 <= float(self.dropout) < 1.0:
            raise ValueError(f"dropout must be in [0, 1), got {self.dropout}")
        if not float(self.layer_norm_eps) > 0:
            raise ValueError("layer_norm_eps must be positive")
        if not 0 <= self.pad_token_id < self.vocab_size:
            raise ValueError(f"pad_token_id {self.pad_token_id} is outside the vocabulary")
        if self.max_seq_len > MAX_SEQ_LEN_LIMIT:
            raise ValueError(f"max_seq_len {self.max_seq_len} is above the limit {MAX_SEQ_LEN_LIMIT}")
        if self.parameter_count() > MAX_PARAMETERS:
            raise ValueError(
                f"this config has {self.parameter_count():,} parameters, above the limit "
                f"{MAX_PARAMETERS:,}; reduce d_model, d_ff, n_layers or vocab_size"
            )

    @property
    def d_k(self) -> int:
        """Width of one head."""
        return self.head_dim or self.d_model // self.n_heads

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
        return self.activation in ("swiglu", "geglu", "geglu_tanh")

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
    def use_final_layer_norm(self) -> bool:
        return self.norm == "pre" if self.final_layer_norm is None else self.final_layer_norm

    def parameter_count(self) -> int:
        """Exact number of parameters, computed without building the model."""
        d, f = self.d_model, self.d_ff
        kv = self.kv_heads * self.d_k
        a = self.attn_width
        attn = 2 * d * a + 2 * d * kv + ((a + 2 * kv) if self.bias else 0) + (d if self.use_o_bias else 0)
        gated = self.gated
        ff = (3 if gated else 2) * d * f + (((2 if gated else 1) * f + d) if self.ff_bias else 0)
        norm = d if self.norm_kind == "rmsnorm" else 2 * d
        qk = 2 * (self.d_k if self.norm_kind == "rmsnorm" else 2 * self.d_k) if self.qk_norm else 0
        block = attn + ff + (4 if self.sandwich_norm else 2) * norm + qk
        emb = self.vocab_size * d + self.n_token_types * d - (0 if self.first_attn_norm else norm)
        if self.positional == "learned":
            emb += (self.max_seq_len + self.position_offset) * d
        if self.embedding_layer_norm:
            emb += norm
        final = norm if self.use_final_layer_norm else 0
        head = (d * d + d + 2 * d + self.vocab_size) if self.mlm_head else 0
        if self.mlm_head and not self.tie_mlm_head:
            head += self.vocab_size * d
        if self.lm_head and not self.tie_lm_head:
            head += self.vocab_size * d  # a tied LM head has no parameters of its own
        return emb + self.n_layers * block + final + head

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), sort_keys=True)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> TransformerConfig:
        """Build a config from untrusted data: unknown keys and wrong types raise ValueError."""
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
            elif isinstance(default, tuple):
                if not isinstance(value, list | tuple) or not all(isinstance(v, str) for v in value):
                    raise ValueError(f"{key} must be a list of strings, got {value!r}")
                value = tuple(value)
            clean[key] = value
        return cls(**clean)

    def replace(self, **changes: Any) -> TransformerConfig:
        return dataclasses.replace(self, **changes)
