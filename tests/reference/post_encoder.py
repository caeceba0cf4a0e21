"""The encoder of the post *Attention from scratch*, written from its description as its readers build it: the
reference the importer is checked against (its parameter names, buffers and forward pass are the post's).

Beyond the post, switches for the variants readers make: post-norm blocks, learned positions, no final norm,
a position table that is not saved, and an output layer on top. ``weights`` collects every layer's attention
pattern (B, H, N, M) when a list is passed in.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn


def attention(q, k, v, mask=None, weights: list | None = None):
    """softmax(q kᵀ / √d_k) v with masked cells (mask == 0) at -inf; q (B, H, N, d_k), k/v (B, H, M, d_k)."""
    scores = q @ k.transpose(-2, -1) / q.size(-1) ** 0.5  # (B, H, N, M)
    if mask is not None:
        scores = scores.masked_fill(mask == 0, float("-inf"))
    pattern = F.softmax(scores, dim=-1)
    if weights is not None:
        weights.append(pattern.detach())
    return pattern @ v  # (B, H, N, d_k)


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model: int, n_heads: int, bias: bool = False):
        super().__init__()
        assert d_model % n_heads == 0
        self.d_model, self.n_heads, self.d_k = d_model, n_heads, d_model // n_heads
        self.W_q = nn.Linear(d_model, d_model, bias=bias)
        self.W_k = nn.Linear(d_model, d_model, bias=bias)
        self.W_v = nn.Linear(d_model, d_model, bias=bias)
        self.W_o = nn.Linear(d_model, d_model, bias=bias)

    def heads(self, x):
        B, N, _ = x.shape
        return x.view(B, N, self.n_heads, self.d_k).transpose(1, 2)  # (B, H, N, d_k)

    def forward(self, x, mask=None, weights=None):
        q, k, v = self.heads(self.W_q(x)), self.heads(self.W_k(x)), self.heads(self.W_v(x))
        out = attention(q, k, v, mask, weights)  # (B, H, N, d_k)
        B, H, N, d_k = out.shape
        return self.W_o(out.transpose(1, 2).contiguous().view(B, N, H * d_k))


class SinusoidalPositionalEncoding(nn.Module):
    def __init__(self, d_model: int, max_seq_len: int = 4096, persistent: bool = True):
        super().__init__()
        self.dropout = nn.Dropout(0.1)
        pe = torch.zeros(max_seq_len, d_model)
        position = torch.arange(max_seq_len, dtype=torch.float).unsqueeze(1)
        div = torch.exp(torch.arange(0, d_model, 2, dtype=torch.float) * (-math.log(10000.0) / d_model))
        pe[:, 0::2] = torch.sin(position * div)
        pe[:, 1::2] = torch.cos(position * div)
        self.register_buffer("pe", pe.unsqueeze(0), persistent=persistent)  # (1, L, d_model)

    def forward(self, x):
        return self.dropout(x + self.pe[:, : x.size(1)])


class LearnedPositions(nn.Module):
    """What a reader writes in place of the sinusoidal table: a trained one (saved as pos_enc.weight)."""

    def __init__(self, d_model: int, max_seq_len: int):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(max_seq_len, d_model) * 0.1)

    def forward(self, x):
        return x + self.weight[: x.size(1)]


class TransformerEncoderBlock(nn.Module):
    def __init__(self, d_model: int, n_heads: int, d_ff: int, post_norm: bool = False, bias: bool = False):
        super().__init__()
        self.attn = MultiHeadAttention(d_model, n_heads, bias)
        self.ff = nn.Sequential(nn.Linear(d_model, d_ff), nn.GELU(), nn.Dropout(0.1), nn.Linear(d_ff, d_model))
        self.norm1, self.norm2 = nn.LayerNorm(d_model), nn.LayerNorm(d_model)
        self.drop1, self.drop2 = nn.Dropout(0.1), nn.Dropout(0.1)
        self.post_norm = post_norm

    def forward(self, x, mask=None, weights=None):
        if self.post_norm:
            x = self.norm1(x + self.drop1(self.attn(x, mask, weights)))
            return self.norm2(x + self.drop2(self.ff(x)))
        x = x + self.drop1(self.attn(self.norm1(x), mask, weights))  # pre-norm, as in the post
        return x + self.drop2(self.ff(self.norm2(x)))


class TransformerEncoder(nn.Module):
    def __init__(
        self,
        vocab_size: int,
        d_model: int = 512,
        n_heads: int = 8,
        n_layers: int = 6,
        d_ff: int = 2048,
        max_seq_len: int = 512,
        *,
        post_norm: bool = False,
        learned_positions: bool = False,
        final_norm: bool = True,
        save_table: bool = True,
        bias: bool = False,
    ):
        super().__init__()
        self.embedding = nn.Embedding(vocab_size, d_model)
        self.pos_enc = (
            LearnedPositions(d_model, max_seq_len)
            if learned_positions
            else SinusoidalPositionalEncoding(d_model, max_seq_len, persistent=save_table)
        )
        self.layers = nn.ModuleList(
            TransformerEncoderBlock(d_model, n_heads, d_ff, post_norm, bias) for _ in range(n_layers)
        )
        self.norm = nn.LayerNorm(d_model) if final_norm else nn.Identity()
        nn.init.normal_(self.embedding.weight, mean=0, std=d_model**-0.5)
        for m in self.modules():
            if isinstance(m, nn.Linear):
                nn.init.xavier_uniform_(m.weight)
                if m.bias is not None:
                    nn.init.zeros_(m.bias)

    def forward(self, tokens, mask=None, weights=None):
        x = self.pos_enc(self.embedding(tokens) * self.embedding.embedding_dim**0.5)
        for layer in self.layers:
            x = layer(x, mask, weights)
        return self.norm(x)


class WithHead(nn.Module):
    """The encoder with an output layer on top (an MLM or classification head), as readers train it."""

    def __init__(self, encoder: TransformerEncoder, n_out: int):
        super().__init__()
        self.encoder = encoder
        self.head = nn.Linear(encoder.embedding.embedding_dim, n_out)

    def forward(self, tokens, mask=None, weights=None):
        return self.head(self.encoder(tokens, mask, weights))


def make(seed: int = 0, **kwargs) -> TransformerEncoder:
    """A small post encoder in eval mode with non-trivial LayerNorm parameters (random weights and biases), so a
    norm that is skipped or misplaced shows."""
    torch.manual_seed(seed)
    sizes = dict(vocab_size=30522, d_model=64, n_heads=4, n_layers=2, d_ff=128, max_seq_len=128)
    model = TransformerEncoder(**{**sizes, **kwargs})
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, nn.LayerNorm):
                m.weight.uniform_(0.5, 1.5)
                m.bias.normal_(0.0, 0.2)
            if isinstance(m, nn.Linear) and m.bias is not None:
                m.bias.normal_(0.0, 0.05)
    return model.eval()


def run(model: nn.Module, ids: torch.Tensor, attention_mask: torch.Tensor | None = None):
    """(final hidden state (B, N, d_model), [pattern (B, H, N, M) per layer]) of the reference forward pass;
    ``attention_mask`` (B, M), 1 = real token, becomes the post's (B, 1, 1, M) mask."""
    weights: list = []
    mask = None if attention_mask is None else attention_mask[:, None, None, :]
    with torch.no_grad():
        out = model(ids, mask, weights)
    return out, weights


TEXTS = (
    "The animal didn't cross the street because it was too tired.",
    "The cat sat on the mat.",
    "Attention is all you need, they said; then came the transformer.",
)


def batch(tokenizer, texts=TEXTS) -> tuple[torch.Tensor, torch.Tensor]:
    """Texts padded to one length: (ids (B, N), attention_mask (B, N), 1 = real token)."""
    encoded = [list(tokenizer.encode(t).ids) for t in texts]
    n = max(map(len, encoded))
    ids = torch.tensor([e + [0] * (n - len(e)) for e in encoded])
    mask = torch.tensor([[1] * len(e) + [0] * (n - len(e)) for e in encoded])
    return ids, mask


def parity(ours: nn.Module, reference: nn.Module, ids: torch.Tensor, mask: torch.Tensor | None = None):
    """(largest |Δ| of the final hidden state, largest |Δ| of any attention weight) between an Attention Lab
    model and the reference on the same batch."""
    from model.capture import run_with_cache  # the project side, imported only where it is compared

    encoder = reference.encoder if isinstance(reference, WithHead) else reference
    hidden, patterns = run(encoder, ids, mask)
    mine, trace = run_with_cache(ours, ids, mask, kinds=["pattern"])
    assert len(patterns) == len(trace.layers("pattern"))
    worst = max(float((trace.get("pattern", i) - p).abs().max()) for i, p in enumerate(patterns))
    return float((mine - hidden).abs().max()), worst
