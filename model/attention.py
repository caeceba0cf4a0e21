"""Scaled dot-product attention and multi-head attention, from first principles.

Shapes: B batch, H heads, N query positions, M key positions, d_k head width.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from model.disentangled import position_terms
from model.hooks import HookPoint
from model.kvcache import KVCache  # imported from here by generation, patching and the needle test


def attention_scores(
    q: torch.Tensor,
    k: torch.Tensor,
    mask: torch.Tensor | None = None,
    scale: bool = True,
    factor: float = 0.0,
    softcap: float = 0.0,
    bias: torch.Tensor | None = None,
) -> torch.Tensor:
    """QKᵀ (divided by √d_k when ``scale``; multiplied by ``factor`` instead when one is given, as Gemma's
    query_pre_attn_scalar^-½), soft-capped to ``softcap``·tanh(s / ``softcap``) when given (Gemma 2), plus a
    relative-position ``bias`` when given (T5, MPNet), with blocked cells set to −inf.

    q: (B, H, N, d_k), k: (B, H, M, d_k) or, grouped-query, (B, H_kv, M, d_k) shared by H / H_kv query heads each;
    mask and bias: broadcastable to (B, H, N, M), mask 0 = blocked. Returns (B, H, N, M).
    """
    scores = grouped(q, k.transpose(-2, -1))  # (B, H, N, M)
    if scale and factor:
        scores = scores * factor
    elif scale:
        # Dot products of d_k-dim vectors with unit-variance entries have variance d_k; dividing by
        # sqrt(d_k) keeps the softmax out of its saturated, near-one-hot region.
        scores = scores / math.sqrt(q.size(-1))
    if softcap:  # Gemma 2: no score beyond ±softcap, however far q and k align
        scores = torch.tanh(scores / softcap) * softcap
    if bias is not None:  # a learned number per head and relative position, whatever q and k are
        scores = scores + bias
    if mask is not None:
        scores = scores.masked_fill(mask == 0, float("-inf"))
    return scores


def grouped(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """x @ y per head, where y may hold fewer heads than x (grouped-query attention: x's head h reads y's head
    h // (H / H_kv)) without repeating y: each group's rows of x are stacked into one product with its head of y (a
    decoding step with a long cache copied every cached key and value H / H_kv times over before).

    x: (B, H, N, a), y: (B, H_kv, a, b) with H a multiple of H_kv. Returns (B, H, N, b)."""
    B, H, N, _ = x.shape
    h_kv = y.size(1)
    if h_kv == H:
        return x @ y  # (B, H, N, b)
    rows = x.reshape(B, h_kv, (H // h_kv) * N, x.size(-1))  # (B, H_kv, g·N, a): head h = kv·g + j, g = H / H_kv
    return (rows @ y).view(B, H, N, y.size(-1))  # (B, H, N, b)


def masked_softmax(scores: torch.Tensor) -> torch.Tensor:
    """Softmax over the last axis; a row whose every key is −inf becomes all zeros, not NaN."""
    # a row is all −inf exactly when its largest score is −inf; the max over floats is ~10× faster than ``all``
    # over a boolean tensor on CPU (0.24 → 0.02 ms for 32 × 4 × 33 × 33, 36 → 5 ms for 9 × 2,048 × 2,048)
    dead = torch.isneginf(scores.amax(dim=-1, keepdim=True))  # (..., N, 1)
    if bool(dead.any()):
        scores = scores.masked_fill(dead, 0.0)
        return torch.softmax(scores, dim=-1).masked_fill(dead, 0.0)
    return torch.softmax(scores, dim=-1)


def softmax_with_sink(scores: torch.Tensor, sinks: torch.Tensor) -> torch.Tensor:
    """Softmax over the M keys and one more logit per head that belongs to no token (gpt-oss's learned sink): the
    sink's share is the last column, the tokens' weights sum to 1 − it. scores (B, H, N, M), sinks (H,) ->
    (B, H, N, M + 1)."""
    B, H, N, _ = scores.shape
    sink = sinks.to(scores.dtype).view(1, H, 1, 1).expand(B, H, N, 1)  # (B, H, N, 1)
    both = torch.cat([scores, sink], dim=-1)  # (B, H, N, M + 1)
    both = both - both.amax(dim=-1, keepdim=True)  # as transformers does; the sink keeps every row finite
    return torch.softmax(both, dim=-1)


def scaled_dot_product_attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    mask: torch.Tensor | None = None,
    dropout_p: float = 0.0,
    scale: bool = True,
) -> tuple[torch.Tensor, torch.Tensor]:
    """softmax(QKᵀ/√d_k)·V.

    q: (B, H, N, d_k), k and v: (B, H, M, d_k), mask broadcastable to (B, H, N, M) with 0 = blocked.
    Returns (output (B, H, N, d_k), weights (B, H, N, M)).
    """
    weights = masked_softmax(attention_scores(q, k, mask, scale))
    if dropout_p > 0.0:
        weights = F.dropout(weights, p=dropout_p)
    return weights @ v, weights  # (B, H, N, d_k)


class MultiHeadAttention(nn.Module):
    """Multi-head attention with W_q, W_k, W_v, W_o and hook points at every step.

    With ``n_kv_heads`` < ``n_heads`` it is grouped-query attention (Ainslie et al., 2023): query head h
    reads key/value head h // (n_heads / n_kv_heads), so W_k and W_v are narrower than W_q. MHA is
    n_kv_heads = n_heads; the same code serves both.

    Hook points (module paths relative to this module):
    ``hook_q`` (B, H, N, d_k); ``hook_k``/``hook_v`` (B, H_kv, M, d_k) — one per key/value head, not repeated;
    ``hook_scores`` and ``hook_pattern`` (B, H, N, M), ``hook_z`` the per-head output before W_o (B, H, N, d_k),
    ``hook_out`` the result (B, N, d_model).
    """

    def __init__(
        self,
        d_model: int,
        n_heads: int,
        dropout: float = 0.0,
        bias: bool = False,
        rope: nn.Module | None = None,
        n_kv_heads: int = 0,
        o_bias: bool | None = None,
        qk_norm: tuple[nn.Module, nn.Module] | None = None,
        qk_norm_whole: bool = False,
        scale_factor: float = 0.0,
        head_dim: int = 0,
        softcap: float = 0.0,
        sinks: bool = False,
        disentangled: tuple[str, ...] = (),
        share_att_key: bool = False,
    ) -> None:
        super().__init__()
        if not head_dim and d_model % n_heads:
            raise ValueError(f"d_model ({d_model}) must be divisible by n_heads ({n_heads})")
        n_kv_heads = n_kv_heads or n_heads
        if n_heads % n_kv_heads:
            raise ValueError(f"n_kv_heads ({n_kv_heads}) must divide n_heads ({n_heads})")
        self.d_model, self.n_heads, self.d_k = d_model, n_heads, head_dim or d_model // n_heads
        self.n_kv_heads, self.group = n_kv_heads, n_heads // n_kv_heads
        self.dropout = dropout
        self.scale_factor = scale_factor  # 0: 1/√d_k
        self.softcap = softcap  # Gemma 2's attention-logit soft-capping; 0: none
        # gpt-oss: one learned logit per head in every row's softmax, belonging to no token (H,)
        self.sinks = nn.Parameter(torch.zeros(n_heads)) if sinks else None
        self.w_q = nn.Linear(d_model, n_heads * self.d_k, bias=bias)  # H·d_k = d_model unless head_dim is set
        self.w_k = nn.Linear(d_model, n_kv_heads * self.d_k, bias=bias)
        self.w_v = nn.Linear(d_model, n_kv_heads * self.d_k, bias=bias)
        self.w_o = nn.Linear(n_heads * self.d_k, d_model, bias=bias if o_bias is None else o_bias)
        self.rope = rope
        # DeBERTa: position terms from the relative embeddings, through W_q/W_k (shared) or projections of their own
        self.disentangled = tuple(disentangled)
        own = not share_att_key
        self.pos_k = nn.Linear(d_model, n_heads * self.d_k) if own and "c2p" in disentangled else None
        self.pos_q = nn.Linear(d_model, n_heads * self.d_k) if own and "p2c" in disentangled else None
        self.hook_c2p = HookPoint()  # (B, H, N, M), DeBERTa's content→position term, scaled
        self.hook_p2c = HookPoint()  # (B, H, N, M), its position→content term, scaled
        # QK-norm (Qwen3, Gemma 3): a norm over d_k of each head's q and k, before RoPE
        self.q_norm, self.k_norm = qk_norm if qk_norm is not None else (None, None)
        self.qk_whole = qk_norm_whole  # the norms span the whole projection (OLMo 2), not one head
        self.hook_q = HookPoint()  # (B, H, N, d_k), after RoPE when used
        self.hook_k = HookPoint()  # (B, H_kv, M, d_k), after RoPE; every cached position when generating
        self.hook_v = HookPoint()  # (B, H_kv, M, d_k)
        self.hook_scores = HookPoint()  # (B, H, N, M), scaled and masked (-inf = blocked)
        self.hook_pattern = HookPoint()  # (B, H, N, M), rows sum to 1 (1 − the sink's share with sinks)
        self.hook_sink = HookPoint()  # (B, H, N), the share of each row the learned sink takes (sinks only)
        self.hook_z = HookPoint()  # (B, H, N, d_k), each head's output before W_o
        self.hook_out = HookPoint()  # (B, N, d_model)

    def split_heads(self, x: torch.Tensor, heads: int | None = None) -> torch.Tensor:
        """(B, N, heads * d_k) -> (B, heads, N, d_k); heads defaults to n_heads."""
        B, N, _ = x.shape
        return x.view(B, N, heads or self.n_heads, self.d_k).transpose(1, 2)  # (B, H, N, d_k)

    def merge_heads(self, x: torch.Tensor) -> torch.Tensor:
        """(B, H, N, d_k) -> (B, N, d_model)."""
        B, H, N, d_k = x.shape
        return x.transpose(1, 2).reshape(B, N, H * d_k)  # (B, N, H·d_k), d_model unless head_dim is set apart

    def expand_kv(self, x: torch.Tensor) -> torch.Tensor:
        """(B, H_kv, M, d_k) -> (B, H, M, d_k): each key/value head repeated for the query heads of its group."""
        return x if self.group == 1 else x.repeat_interleave(self.group, dim=1)  # (B, H, M, d_k)

    def forward(
        self,
        x: torch.Tensor,
        context: torch.Tensor | None = None,
        mask: torch.Tensor | None = None,
        scale: bool = True,
        positions: bool = True,
        cache: KVCache | None = None,
        layer: int = 0,
        fused: bool = False,
        is_causal: bool = False,
        bias: torch.Tensor | None = None,
        rel: tuple[torch.Tensor, torch.Tensor] | None = None,
    ) -> torch.Tensor:
        """x: (B, N, d_model) queries; context: (B, M, d_model) keys/values (defaults to x); ``bias`` (1 or B, H, N,
        M): a relative-position bias added to every score (T5, MPNet; ``Transformer.position_bias``).

        mask broadcastable to (B, H, N, M), 0 = blocked. ``cache`` (self-attention only) holds the earlier
        positions' keys and values of ``layer``; x is then the newest N tokens. Returns (B, N, d_model).

        ``fused``: softmax(QKᵀ)·V in one fused kernel (torch's scaled_dot_product_attention), as the post advises
        for production: memory linear in N instead of an (N, M) matrix per head, so hook_scores and hook_pattern
        do not fire (q, k, v, z and out do; a pattern is computed from the captured q and k when one is shown,
        model/long.py). ``is_causal`` (fused only, with no mask): the plain causal triangle, which the kernel
        skips block by block. A row with every key blocked is NaN here, not zeros.
        """
        kv = x if context is None else context
        offset = cache.cached(layer) if cache is not None else 0
        q, k = self.w_q(x), self.w_k(kv)  # (B, N, H·d_k), (B, M, H_kv·d_k)
        whole = self.q_norm is not None and self.k_norm is not None and self.qk_whole
        if whole:
            q, k = self.q_norm(q), self.k_norm(k)  # over the whole projection, each position apart (OLMo 2)
        q = self.split_heads(q)  # (B, H, N, d_k)
        k = self.split_heads(k, self.n_kv_heads)  # (B, H_kv, M, d_k)
        v = self.split_heads(self.w_v(kv), self.n_kv_heads)  # (B, H_kv, M, d_k)
        if self.q_norm is not None and self.k_norm is not None and not whole:
            q, k = self.q_norm(q), self.k_norm(k)  # over d_k, each head and position apart
        if self.rope is not None and positions:
            q, k = self.rope(q, offset), self.rope(k, offset)
        if cache is not None:
            k, v = cache.extend(layer, k, v)  # (B, H_kv, P + N, d_k)
        q, k, v = self.hook_q(q), self.hook_k(k), self.hook_v(v)
        if self.disentangled and rel is not None:  # DeBERTa's terms join the scores as a bias (rel: table, index)
            factor = (self.scale_factor or q.size(-1) ** -0.5) if scale else 1.0
            terms = position_terms(self, q, k, rel[0], rel[1], factor)
            hooks = {"c2p": self.hook_c2p, "p2c": self.hook_p2c}
            bias = sum((hooks[t](terms[t]) for t in terms), torch.zeros(()) if bias is None else bias)
        if fused:
            return self._fused(q, k, v, mask, scale, is_causal, bias)
        if is_causal:
            raise ValueError("is_causal is for the fused kernel; pass the causal mask instead")
        scores = attention_scores(q, k, mask, scale, self.scale_factor, self.softcap, bias)  # K/V heads shared
        # scores: (B, H, N, M)
        scores = self.hook_scores(scores)
        if self.sinks is None:
            weights = masked_softmax(scores)  # (B, H, N, M)
        else:
            both = softmax_with_sink(scores, self.sinks)  # (B, H, N, M + 1)
            weights = both[..., :-1]
            self.hook_sink(both[..., -1])  # (B, H, N)
        pattern = self.hook_pattern(weights)  # (B, H, N, M)
        if self.training and self.dropout > 0:
            pattern = F.dropout(pattern, p=self.dropout)
        z = self.hook_z(grouped(pattern, v))  # (B, H, N, d_k)
        return self.hook_out(self.w_o(self.merge_heads(z)))  # (B, N, d_model)

    def _fused(
        self,
        q: torch.Tensor,
        k: torch.Tensor,
        v: torch.Tensor,
        mask: torch.Tensor | None,
        scale: bool,
        causal: bool,
        bias: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """q (B, H, N, d_k), k and v (B, H_kv, M, d_k) -> (B, N, d_model) through torch's fused kernel; a
        relative-position ``bias`` (…, N, M) goes in as the kernel's float mask, −inf where ``mask`` blocks."""
        factor = (self.scale_factor or q.size(-1) ** -0.5) if scale else 1.0
        if bias is not None:
            if causal:  # the triangle written out: the kernel takes a float mask or is_causal, not both
                n, m = q.size(-2), k.size(-2)
                mask = torch.ones(n, m, dtype=torch.bool, device=q.device).tril(m - n)[None, None]  # (1, 1, N, M)
                causal = False
            blocked = None if mask is None else (mask == 0)
            mask = bias.to(q.dtype) if blocked is None else bias.to(q.dtype).masked_fill(blocked, float("-inf"))
        if self.softcap or self.sinks is not None:  # the fused kernel has neither a cap nor a sink: the same sum, a
            # block of queries at a time
            return self.hook_out(self.w_o(self.merge_heads(self.hook_z(self._capped(q, k, v, mask, scale, causal)))))
        p = self.dropout if self.training else 0.0
        if mask is not None and mask.dtype != torch.bool and bias is None:
            mask = mask != 0  # the kernel would add a float mask to the scores; ours marks blocked cells with 0
        z = F.scaled_dot_product_attention(  # (B, H, N, d_k); the K/V heads are shared inside the kernel
            q, k, v, attn_mask=mask, dropout_p=p, is_causal=causal, scale=factor, enable_gqa=self.group > 1
        )
        return self.hook_out(self.w_o(self.merge_heads(self.hook_z(z))))  # (B, N, d_model)

    def _capped(
        self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: torch.Tensor | None, scale: bool, causal: bool
    ) -> torch.Tensor:
        """Soft-capped or sinked attention (B, H, N, d_k) in blocks of 512 queries: memory linear in N, as the fused
        path."""
        N, M = q.size(-2), k.size(-2)
        k, v = self.expand_kv(k), self.expand_kv(v)  # (B, H, M, d_k)
        out = []
        for a in range(0, N, 512):
            b = min(N, a + 512)
            block = None if mask is None else mask[..., a:b, :]  # (…, R, M)
            if causal:  # queries a…b−1 at positions M − N + a…: keys up to themselves
                rows = torch.arange(M - N + a, M - N + b, device=q.device)[:, None]  # (R, 1)
                tri = torch.arange(M, device=q.device)[None, :] <= rows  # (R, M)
                block = tri if block is None else block & tri
            scores = attention_scores(q[..., a:b, :], k, block, scale, self.scale_factor, self.softcap)
            weights = masked_softmax(scores) if self.sinks is None else softmax_with_sink(scores, self.sinks)[..., :-1]
            out.append(weights @ v)  # (B, H, R, d_k)
        return torch.cat(out, dim=-2)  # (B, H, N, d_k)
