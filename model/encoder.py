"""The transformer encoder: embeddings, positional encoding, pre-/post-norm blocks, MLM head."""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from model.attention import MultiHeadAttention
from model.config import EncoderConfig
from model.hooks import HookPoint
from model.positional import LearnedPositionalEmbedding, RotaryEmbedding, SinusoidalPositionalEncoding


class FeedForward(nn.Module):
    """Position-wise Linear -> activation -> Linear."""

    def __init__(self, cfg: EncoderConfig) -> None:
        super().__init__()
        self.fc1 = nn.Linear(cfg.d_model, cfg.d_ff, bias=cfg.ff_bias)
        self.fc2 = nn.Linear(cfg.d_ff, cfg.d_model, bias=cfg.ff_bias)
        self.activation = cfg.activation

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.fc1(x)  # (B, N, d_ff)
        if self.activation == "relu":
            h = F.relu(h)
        else:
            h = F.gelu(h, approximate="tanh" if self.activation == "gelu_tanh" else "none")
        return self.fc2(h)  # (B, N, d_model)


class TransformerEncoderBlock(nn.Module):
    """One encoder layer.

    Pre-norm (default): x + drop(attn(LN(x))), then x + drop(FF(LN(x))). The residual path stays an
    identity, so gradients reach early layers unchanged and training needs no warm-up tricks.
    Post-norm (BERT): LN(x + attn(x)), then LN(x + FF(x)).
    """

    def __init__(self, cfg: EncoderConfig, rope: nn.Module | None = None) -> None:
        super().__init__()
        self.norm = cfg.norm
        self.attn = MultiHeadAttention(cfg.d_model, cfg.n_heads, cfg.dropout, cfg.bias, rope=rope)
        self.ln1 = nn.LayerNorm(cfg.d_model, eps=cfg.layer_norm_eps)
        self.ff = FeedForward(cfg)
        self.ln2 = nn.LayerNorm(cfg.d_model, eps=cfg.layer_norm_eps)
        self.drop = nn.Dropout(cfg.dropout)
        self.hook_resid_pre = HookPoint()  # (B, N, d_model)
        self.hook_attn_in = HookPoint()  # (B, N, d_model), what attention reads: LN(x) pre-norm, x post-norm
        self.hook_resid_mid = HookPoint()  # (B, N, d_model), after the attention sublayer
        self.hook_resid_post = HookPoint()  # (B, N, d_model)

    def forward(
        self, x: torch.Tensor, mask: torch.Tensor | None = None, scale: bool = True, positions: bool = True
    ) -> torch.Tensor:
        """x: (B, N, d_model); mask broadcastable to (B, H, N, N), 0 = blocked.

        ``positions=False`` skips RoPE (the permutation lab's switch)."""
        x = self.hook_resid_pre(x)
        if self.norm == "pre":
            h = self.hook_attn_in(self.ln1(x))
            x = self.hook_resid_mid(x + self.drop(self.attn(h, mask=mask, scale=scale, positions=positions)))
            return self.hook_resid_post(x + self.drop(self.ff(self.ln2(x))))
        h = self.hook_attn_in(x)
        x = self.hook_resid_mid(self.ln1(x + self.drop(self.attn(h, mask=mask, scale=scale, positions=positions))))
        return self.hook_resid_post(self.ln2(x + self.drop(self.ff(x))))


class MLMHead(nn.Module):
    """BERT's prediction head: dense -> GELU -> LayerNorm -> decoder tied to the token embeddings."""

    def __init__(self, cfg: EncoderConfig) -> None:
        super().__init__()
        self.dense = nn.Linear(cfg.d_model, cfg.d_model)
        self.ln = nn.LayerNorm(cfg.d_model, eps=cfg.layer_norm_eps)
        self.bias = nn.Parameter(torch.zeros(cfg.vocab_size))

    def forward(self, h: torch.Tensor, embedding: torch.Tensor) -> torch.Tensor:
        """h: (B, N, d_model), embedding: (V, d_model) -> logits (B, N, V)."""
        return self.ln(F.gelu(self.dense(h))) @ embedding.t() + self.bias


class TransformerEncoder(nn.Module):
    """Token ids (B, N) -> hidden states (B, N, d_model)."""

    def __init__(self, cfg: EncoderConfig) -> None:
        super().__init__()
        self.cfg = cfg
        self.tok_emb = nn.Embedding(cfg.vocab_size, cfg.d_model)
        self.type_emb = nn.Embedding(cfg.n_token_types, cfg.d_model) if cfg.n_token_types else None
        self.pos_enc: nn.Module | None = None
        rope = None
        if cfg.positional == "sinusoidal":
            self.pos_enc = SinusoidalPositionalEncoding(cfg.d_model, cfg.max_seq_len)
        elif cfg.positional == "learned":
            self.pos_enc = LearnedPositionalEmbedding(cfg.d_model, cfg.max_seq_len)
        elif cfg.positional == "rope":
            rope = RotaryEmbedding(cfg.d_k, cfg.max_seq_len, cfg.rope_base)
        self.rope = rope  # one shared module; blocks hold a reference, not a copy
        self.emb_ln = nn.LayerNorm(cfg.d_model, eps=cfg.layer_norm_eps) if cfg.embedding_layer_norm else None
        self.drop = nn.Dropout(cfg.dropout)
        self.hook_embed = HookPoint()  # (B, N, d_model), input to the first block
        self.blocks = nn.ModuleList(TransformerEncoderBlock(cfg, rope) for _ in range(cfg.n_layers))
        self.ln_f = nn.LayerNorm(cfg.d_model, eps=cfg.layer_norm_eps) if cfg.use_final_layer_norm else None
        self.mlm = MLMHead(cfg) if cfg.mlm_head else None
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """The classic recipe: N(0, d_model^-0.5) embeddings, Xavier-uniform linears, zero biases."""
        std = self.cfg.d_model**-0.5
        for module in self.modules():
            if isinstance(module, nn.Embedding):
                nn.init.normal_(module.weight, 0.0, std)
            elif isinstance(module, nn.Linear):
                nn.init.xavier_uniform_(module.weight)
                if module.bias is not None:
                    nn.init.zeros_(module.bias)
            elif isinstance(module, nn.LayerNorm):
                nn.init.ones_(module.weight)
                nn.init.zeros_(module.bias)

    def build_mask(
        self, n: int, attention_mask: torch.Tensor | None, causal: bool, device: torch.device
    ) -> torch.Tensor | None:
        """Combine padding (B, N) and causal masks into (B or 1, 1, N, N) with 0 = blocked."""
        mask = None
        if attention_mask is not None:
            mask = attention_mask[:, None, None, :].to(torch.bool)  # (B, 1, 1, N)
        if causal:
            tri = torch.ones(n, n, dtype=torch.bool, device=device).tril()[None, None]  # (1, 1, N, N)
            mask = tri if mask is None else mask & tri
        return mask

    def embed(
        self, ids: torch.Tensor, token_type_ids: torch.Tensor | None = None, positions: bool = True
    ) -> torch.Tensor:
        """ids (B, N) -> embeddings with position (and type) added (B, N, d_model)."""
        x = self.tok_emb(ids)
        if self.cfg.scale_embeddings:
            # Embeddings start at std d^-0.5; multiplying by sqrt(d) puts them on the same unit scale
            # as the sinusoidal table instead of letting position drown the token.
            x = x * math.sqrt(self.cfg.d_model)
        if self.type_emb is not None:
            types = torch.zeros_like(ids) if token_type_ids is None else token_type_ids
            x = x + self.type_emb(types)
        if self.pos_enc is not None and positions:
            x = self.pos_enc(x)
        if self.emb_ln is not None:
            x = self.emb_ln(x)
        return self.drop(x)

    def forward(
        self,
        ids: torch.Tensor,
        attention_mask: torch.Tensor | None = None,
        token_type_ids: torch.Tensor | None = None,
        *,
        causal: bool | None = None,
        scale: bool = True,
        positions: bool = True,
    ) -> torch.Tensor:
        """ids: (B, N) int64; attention_mask: (B, N), 1 = real token, 0 = padding.

        Teaching switches for one call: ``causal`` overrides the config; ``scale=False`` drops
        1/sqrt(d_k) everywhere; ``positions=False`` removes every positional signal (table or RoPE).
        Returns hidden states (B, N, d_model).
        """
        if ids.dim() != 2:
            raise ValueError(f"ids must be (batch, length), got shape {tuple(ids.shape)}")
        n = ids.size(1)
        if n > self.cfg.max_seq_len:
            raise ValueError(f"sequence of {n} tokens is longer than max_seq_len {self.cfg.max_seq_len}")
        causal = self.cfg.causal if causal is None else causal
        mask = self.build_mask(n, attention_mask, causal, ids.device)
        x = self.hook_embed(self.embed(ids, token_type_ids, positions))
        for block in self.blocks:
            x = block(x, mask=mask, scale=scale, positions=positions)
        return self.ln_f(x) if self.ln_f is not None else x

    def mlm_logits(self, hidden: torch.Tensor) -> torch.Tensor:
        """hidden (B, N, d_model) -> vocabulary logits (B, N, V); needs ``cfg.mlm_head``."""
        if self.mlm is None:
            raise ValueError("this model has no masked-language-model head")
        return self.mlm(hidden, self.tok_emb.weight)
