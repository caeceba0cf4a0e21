"""A head's QK and OV circuits (Elhage et al., 2021, "A Mathematical Framework for Transformer Circuits").

A head is two low-rank matrices over the residual stream: W_Q W_Kᵀ (d × d, rank ≤ d_k) decides where it looks,
W_V W_O (d × d, rank ≤ d_k) what it writes. Their singular values say how many directions each really uses.
Through the embeddings they become token × token tables (Dar et al., 2023, "Analyzing Transformers in Embedding
Space"): E W_V W_O Uᵀ says which output token a source token pushes up; E W_Q W_Kᵀ Eᵀ which key token a query
token looks for. Elhage et al.'s copying score is Σλ / Σ|λ| over the eigenvalues λ of the full OV circuit
E W_V W_O U: near 1 when a head raises the logit of the token it attends to (a copying head).

The norms are folded in as TransformerLens folds them: the block's attention-norm weight γ scales the rows of
W_Q, W_K, W_V and the final norm's weight scales U; the division by the stream's scale and RoPE's rotation are
left out (they depend on the text and on the positions). Under grouped-query attention the query heads of a
group share W_K and W_V; each query head still has its own circuit.
"""

from __future__ import annotations

import weakref
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch

from model.transformer import RMSNorm, Transformer

TOP = 10


@dataclass(frozen=True)
class Circuit:
    layer: int
    head: int
    kv_head: int  # the key/value head it reads (its own under multi-head attention)
    qk_singular: np.ndarray  # (d_k,) singular values of W_Q W_Kᵀ, largest first
    ov_singular: np.ndarray  # (d_k,) of W_V W_O
    copying: float  # Σλ / Σ|λ| over the full OV circuit's eigenvalues
    ov_pairs: list[tuple[int, int, float]]  # (source token, the output token it raises most, score)
    qk_pairs: list[tuple[int, int, float]]  # (query token, the key token it looks for most, score)


def _gamma(norm: torch.nn.Module | None, d: int) -> torch.Tensor:
    if norm is None or not hasattr(norm, "weight"):
        return torch.ones(d, dtype=torch.float64)
    w = norm.weight.detach().double()
    return w + norm.offset if isinstance(norm, RMSNorm) else w


def head_matrices(model: Transformer, layer: int, head: int) -> dict[str, torch.Tensor]:
    """W_Q, W_K, W_V (d_model, d_k) with the attention norm folded in, W_O (d_k, d_model), in float64."""
    block = model.blocks[layer]
    attn = block.attn
    if not 0 <= head < attn.n_heads:
        raise ValueError(f"head {head} does not exist; layer {layer} has {attn.n_heads}")
    d_k, kv = attn.d_k, head // attn.group
    gamma = _gamma(block.ln1 if model.cfg.norm == "pre" else None, attn.d_model)[:, None]  # (d_model, 1)

    def cols(lin: torch.nn.Linear, h: int) -> torch.Tensor:
        return lin.weight.detach().double()[h * d_k : (h + 1) * d_k].t()  # (d_model, d_k)

    w_o = attn.w_o.weight.detach().double()[:, head * d_k : (head + 1) * d_k].t()  # (d_k, d_model)
    w_o = w_o * model.cfg.residual_multiplier  # what the head writes as it joins the stream (Granite: × m)
    return {
        "q": gamma * cols(attn.w_q, head),
        "k": gamma * cols(attn.w_k, kv),
        "v": gamma * cols(attn.w_v, kv),
        "o": w_o,
        "kv": torch.tensor(kv),
    }


def unembedding(model: Transformer) -> torch.Tensor:
    """U (d_model, V) with the final norm's weight folded in: the decoder's unembedding, or the tied embeddings
    for a masked-language model (its head's dense layer and norm left out)."""
    w = model.tok_emb.weight if model.lm_head is None else model.lm_head.weight  # (V, d_model)
    u = _gamma(model.ln_f, w.size(1))[:, None] * w.detach().double().t()
    return u / model.cfg.logit_divisor  # Granite's logits_scaling


_round_trips: weakref.WeakKeyDictionary[Transformer, torch.Tensor] = weakref.WeakKeyDictionary()


def _round_trip(model: Transformer) -> torch.Tensor:
    """U E (d_model × d_model): the unembedding after the embedding, summed over the vocabulary (once per model:
    for SmolLM2 it is a 49,152-long sum, about a second)."""
    if model not in _round_trips:
        w = model.tok_emb.weight.detach().float()  # (V, d_model)
        _round_trips[model] = (unembedding(model).float() @ w).double()  # (d_model, d_model)
    return _round_trips[model]


def _best_pairs(table: torch.Tensor, rows: Sequence[int], cols: Sequence[int] | None, k: int) -> list:
    """Each row's strongest column, the k strongest rows first: (row id, column id, score). One pair per source
    token, so that one token with a large embedding does not fill the list."""
    values, where = table.max(dim=1)  # (S,)
    order = values.argsort(descending=True)[:k]
    return [
        (int(rows[r]), int(cols[where[r]] if cols is not None else where[r]), float(values[r])) for r in order.tolist()
    ]


def circuit(model: Transformer, layer: int, head: int, tokens: Sequence[int], k: int = TOP) -> Circuit:
    """The head's circuit card. ``tokens``: the token ids whose pairs are listed (the text's, unique): each OV
    pair is a text token and the vocabulary token it raises most; each QK pair a text token and the text token it
    looks for most. Strongest first, one pair per source token."""
    with torch.no_grad():
        m = head_matrices(model, layer, head)
        emb = model.tok_emb.weight.detach().double()  # (V, d_model)
        u = unembedding(model)  # (d_model, V)
        # W_Q W_Kᵀ and W_V W_O share their nonzero singular values with small d_k × d_k products
        qk = torch.linalg.svdvals(m["q"] @ m["k"].t())[: m["q"].size(1)]
        ov = torch.linalg.svdvals(m["v"] @ m["o"])[: m["v"].size(1)]
        # the full OV circuit E W_V W_O U (V × V) has the nonzero eigenvalues of W_O U E W_V (d_k × d_k)
        lam = torch.linalg.eigvals(m["o"] @ _round_trip(model) @ m["v"])
        copying = float(lam.real.sum() / lam.abs().sum()) if float(lam.abs().sum()) > 0 else float("nan")
        ids = list(dict.fromkeys(int(t) for t in tokens))
        src = emb[ids]  # (S, d_model)
        ov_table = (src @ m["v"] @ m["o"]) @ u  # (S, V)
        qk_table = (src @ m["q"]) @ (src @ m["k"]).t()  # (S, S)
    return Circuit(
        layer,
        head,
        int(m["kv"]),
        qk.numpy(),
        ov.numpy(),
        copying,
        _best_pairs(ov_table, ids, None, k),
        _best_pairs(qk_table, ids, ids, k),
    )
