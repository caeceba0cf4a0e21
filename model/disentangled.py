"""DeBERTa's disentangled attention (He et al., 2021): position enters every layer's scores as terms of its own,
not as something added to the embeddings. Each relative distance δ = i − j (log-bucketed far away) has an embedding;
the content→position term is q_i · k_pos[δ], the position→content term k_j · q_pos[δ], where k_pos and q_pos are the
relative embeddings through the layer's own key and query projections (``share_att_key``) or through projections of
their own. Both are scaled as the content term is, by 1/√(d_k · (1 + number of terms)).

Shapes: B batch, H heads, N queries, M keys (N = M: self-attention), R = 2 · span relative embeddings.
"""

from __future__ import annotations

import math

import torch
from torch import nn

#: the position terms a config can name
TERMS = ("c2p", "p2c")


def log_buckets(relative: torch.Tensor, buckets: int, max_position: int) -> torch.Tensor:
    """DeBERTa's ``make_log_bucket_position``: distances below buckets / 2 kept, farther ones log-spaced so that
    max_position − 1 lands on buckets / 2 − 1 more; the sign kept. relative (…) int64 -> (…) int64."""
    mid = buckets // 2
    sign = torch.sign(relative)
    near = (relative < mid) & (relative > -mid)
    distance = torch.where(near, torch.full_like(relative, mid - 1), relative.abs()).double()
    far = torch.ceil(torch.log(distance / mid) / math.log((max_position - 1) / mid) * (mid - 1)) + mid
    return torch.where(distance <= mid, relative.double(), far * sign).long()


class RelativeEmbeddings(nn.Module):
    """The table of relative-position embeddings (2 · span, d_model), shared by every layer, optionally normalised
    (``norm_rel_ebd: layer_norm``), and the row each query–key pair reads."""

    def __init__(self, d_model: int, span: int, buckets: int, max_position: int, norm: bool, eps: float) -> None:
        super().__init__()
        self.embedding = nn.Embedding(2 * span, d_model)  # (R, d_model)
        self.ln = nn.LayerNorm(d_model, eps=eps) if norm else None
        self.span, self.buckets, self.max_position = span, buckets, max_position

    def index(self, n: int, device: torch.device | None = None) -> torch.Tensor:
        """The row of the table query i and key j read: clamp(bucket(i − j) + span, 0, 2·span − 1), (N, N) int64."""
        pos = torch.arange(n, device=device)
        relative = pos[:, None] - pos[None, :]  # (N, N): i − j
        if self.buckets > 0 and self.max_position > 0:
            relative = log_buckets(relative, self.buckets, self.max_position)
        return torch.clamp(relative + self.span, 0, 2 * self.span - 1)

    def forward(self, n: int) -> tuple[torch.Tensor, torch.Tensor]:
        """(the table (R, d_model), normalised when configured; the index (N, N))."""
        table = self.embedding.weight
        table = self.ln(table) if self.ln is not None else table
        return table, self.index(n, table.device)


def position_terms(
    attn: nn.Module, q: torch.Tensor, k: torch.Tensor, table: torch.Tensor, index: torch.Tensor, factor: float
) -> dict[str, torch.Tensor]:
    """The position terms ``attn`` (a MultiHeadAttention with ``disentangled`` set) adds to its scores, each
    (B, H, N, M) and already scaled by ``factor``: "c2p" q_i · k_pos[δ(i,j)] and "p2c" k_j · q_pos[δ(i,j)].
    q (B, H, N, d_k), k (B, H, M, d_k) with M = N; table (R, d_model); index (N, M)."""
    B, H, N, _ = q.shape
    M = k.size(-2)
    out = {}
    if "c2p" in attn.disentangled:
        proj = attn.w_k if attn.pos_k is None else attn.pos_k
        pos_k = attn.split_heads(proj(table)[None])  # (1, H, R, d_k)
        every = q @ pos_k.transpose(-2, -1)  # (B, H, N, R): each query against each relative distance
        out["c2p"] = torch.gather(every, -1, index[None, None].expand(B, H, N, M)) * factor  # (B, H, N, M)
    if "p2c" in attn.disentangled:
        proj = attn.w_q if attn.pos_q is None else attn.pos_q
        pos_q = attn.split_heads(proj(table)[None])  # (1, H, R, d_k)
        every = k @ pos_q.transpose(-2, -1)  # (B, H, M, R): each key against each relative distance
        at = index.t()[None, None].expand(B, H, M, N)  # key j, query i reads row δ(i, j)
        out["p2c"] = torch.gather(every, -1, at).transpose(-2, -1) * factor  # (B, H, N, M)
    return out
