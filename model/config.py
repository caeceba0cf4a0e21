"""The one configuration object for the from-scratch encoder."""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from typing import Any, Literal

NormPlacement = Literal["pre", "post"]
PositionalKind = Literal["sinusoidal", "learned", "rope", "none"]
Activation = Literal["gelu", "gelu_tanh", "relu"]

#: Largest model the project agrees to build; checked before any memory is allocated,
#: so a hostile config cannot make the server allocate gigabytes.
MAX_PARAMETERS = 400_000_000
MAX_SEQ_LEN_LIMIT = 65_536


@dataclass(frozen=True)
class EncoderConfig:
    """Every architectural choice of :class:`model.encoder.TransformerEncoder`."""

    vocab_size: int = 32000  # rows of the token-embedding table
    d_model: int = 256  # width of the residual stream
    n_heads: int = 4  # attention heads per layer; d_k = d_model // n_heads
    n_layers: int = 4  # encoder blocks
    d_ff: int = 1024  # hidden width of the feed-forward sublayer
    max_seq_len: int = 512  # longest input; sets learned-position table size
    dropout: float = 0.1  # used only in train() mode; the dashboard runs eval()
    norm: NormPlacement = "pre"  # "pre": x + f(LN(x)) (stable); "post": LN(x + f(x)) (BERT)
    positional: PositionalKind = "sinusoidal"  # how order enters the model
    activation: Activation = "gelu"  # feed-forward non-linearity; "gelu" is the exact erf form
    bias: bool = False  # biases on the Q/K/V/O projections
    ff_bias: bool = True  # biases in the feed-forward layers
    layer_norm_eps: float = 1e-5
    scale_embeddings: bool = True  # multiply token embeddings by sqrt(d_model) (Vaswani et al.)
    n_token_types: int = 0  # > 0 adds BERT-style segment embeddings
    embedding_layer_norm: bool = False  # LayerNorm right after the embedding sum (BERT)
    final_layer_norm: bool | None = None  # None: on for pre-norm, off for post-norm
    causal: bool = False  # each token attends only to itself and earlier tokens
    mlm_head: bool = False  # add a masked-language-model head (tied to the embeddings)
    pad_token_id: int = 0
    rope_base: float = 10000.0

    def __post_init__(self) -> None:
        ints = ("vocab_size", "d_model", "n_heads", "n_layers", "d_ff", "max_seq_len", "n_token_types")
        for name in ints:
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int):
                raise ValueError(f"{name} must be an integer, got {value!r}")
        for name in ("vocab_size", "d_model", "n_heads", "n_layers", "d_ff", "max_seq_len"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be at least 1, got {getattr(self, name)}")
        if self.n_token_types < 0:
            raise ValueError("n_token_types must be 0 (off) or positive")
        if self.d_model % self.n_heads:
            raise ValueError(
                f"d_model ({self.d_model}) must be divisible by n_heads ({self.n_heads}); "
                f"try n_heads in {[h for h in range(1, 17) if self.d_model % h == 0]}"
            )
        if self.norm not in ("pre", "post"):
            raise ValueError(f"norm must be 'pre' or 'post', got {self.norm!r}")
        if self.positional not in ("sinusoidal", "learned", "rope", "none"):
            raise ValueError(f"positional must be one of sinusoidal, learned, rope, none; got {self.positional!r}")
        if self.activation not in ("gelu", "gelu_tanh", "relu"):
            raise ValueError(f"activation must be gelu, gelu_tanh or relu; got {self.activation!r}")
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
        return self.d_model // self.n_heads

    @property
    def use_final_layer_norm(self) -> bool:
        return self.norm == "pre" if self.final_layer_norm is None else self.final_layer_norm

    def parameter_count(self) -> int:
        """Exact number of parameters, computed without building the model."""
        d, f = self.d_model, self.d_ff
        attn = 4 * d * d + (4 * d if self.bias else 0)
        ff = 2 * d * f + ((f + d) if self.ff_bias else 0)
        block = attn + ff + 2 * 2 * d
        emb = self.vocab_size * d + self.n_token_types * d
        if self.positional == "learned":
            emb += self.max_seq_len * d
        if self.embedding_layer_norm:
            emb += 2 * d
        final = 2 * d if self.use_final_layer_norm else 0
        head = (d * d + d + 2 * d + self.vocab_size) if self.mlm_head else 0
        return emb + self.n_layers * block + final + head

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), sort_keys=True)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> EncoderConfig:
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
            if isinstance(default, bool) or key == "final_layer_norm":
                if value is not None and not isinstance(value, bool):
                    raise ValueError(f"{key} must be true or false, got {value!r}")
            elif isinstance(default, float):
                if isinstance(value, bool) or not isinstance(value, int | float):
                    raise ValueError(f"{key} must be a number, got {value!r}")
                value = float(value)
            elif isinstance(default, str) and not isinstance(value, str):
                raise ValueError(f"{key} must be a string, got {value!r}")
            clean[key] = value
        return cls(**clean)

    def replace(self, **changes: Any) -> EncoderConfig:
        return dataclasses.replace(self, **changes)
