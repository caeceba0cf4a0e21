"""One head's computation step by step, and one query's weights term by term (numpy, float64 inside).

N tokens, d_k head width, d_model model width. The inputs are what capture recorded plus the head's
weights (:func:`model.observe.head_weights`); the results match the model's own forward pass.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np


@dataclass
class HeadSteps:
    """Each step of one head's attention for one text. N tokens, d_k head width."""

    x: np.ndarray  # (N, d_model) what the attention sublayer reads
    q: np.ndarray  # (N, d_k)
    k: np.ndarray  # (N, d_k)
    v: np.ndarray  # (N, d_k)
    qk: np.ndarray  # (N, N) raw dot products
    scaled: np.ndarray  # (N, N) divided by sqrt(d_k), or times the model's own factor, soft-capped if it caps
    masked: np.ndarray  # (N, N) with -inf where blocked
    pattern: np.ndarray  # (N, N) softmax
    z: np.ndarray  # (N, d_k) pattern @ v: this head's output
    concat: np.ndarray  # (N, d_model) every head's z side by side
    out: np.ndarray  # (N, d_model) concat @ W_o (+ b): the attention sublayer's output


def softmax_rows(s: np.ndarray) -> np.ndarray:
    """Row softmax that maps an all −inf row to zeros (as the model does)."""
    s = np.asarray(s, dtype=np.float64)
    dead = ~np.isfinite(s).any(-1, keepdims=True) | np.all(np.isneginf(s), -1, keepdims=True)
    m = np.where(dead, 0.0, np.max(np.where(np.isneginf(s), -np.inf, s), -1, keepdims=True))
    e = np.where(np.isneginf(s), 0.0, np.exp(s - m))
    out = e / np.maximum(e.sum(-1, keepdims=True), 1e-300)
    return np.where(dead, 0.0, out)


def scaled_scores(qk: np.ndarray, d_k: int, scale: bool = True, factor: float = 0.0, softcap: float = 0.0):
    """q·k (…, M) as the model scales it: ÷√d_k, or × ``factor`` (Gemma's query_pre_attn_scalar^-½, Granite's
    attention_multiplier) when one is given; then ``softcap``·tanh(s / ``softcap``) when the model caps (Gemma 2)."""
    s = np.asarray(qk, dtype=np.float64)
    if scale:
        s = s * factor if factor else s / math.sqrt(d_k)
    return np.tanh(s / softcap) * softcap if softcap else s


def head_steps(
    q: np.ndarray,
    k: np.ndarray,
    v: np.ndarray,
    z_all: np.ndarray,
    x: np.ndarray,
    scores: np.ndarray,
    weights: dict[str, np.ndarray],
    scale: bool = True,
    factor: float = 0.0,
    softcap: float = 0.0,
) -> HeadSteps:
    """Recompute one head step by step from captured q/k/v (N, d_k), all heads' z (H, N, d_k), the
    attention input x (N, d_model) and the captured scores (N, N, for the mask); ``factor``/``softcap``: the
    model's own score scale and cap (:func:`scaled_scores`)."""
    d_k = q.shape[-1]
    qk = q.astype(np.float64) @ k.astype(np.float64).T  # (N, N)
    scaled = scaled_scores(qk, d_k, scale, factor, softcap)
    masked = np.where(np.isneginf(scores), -np.inf, scaled)
    pattern = softmax_rows(masked)
    z = pattern @ v.astype(np.float64)  # (N, d_k)
    H, N, _ = z_all.shape
    concat = np.asarray(z_all, dtype=np.float64).transpose(1, 0, 2).reshape(N, H * d_k)  # (N, d_model)
    out = concat @ weights["w_o_full"].astype(np.float64)
    if weights["b_o"] is not None:
        out = out + weights["b_o"]
    f = np.float32
    return HeadSteps(
        x.astype(f),
        q.astype(f),
        k.astype(f),
        v.astype(f),
        qk.astype(f),
        scaled.astype(f),
        masked.astype(f),
        pattern.astype(f),
        z.astype(f),
        concat.astype(f),
        out.astype(f),
    )


def observed_head_steps(obs, weights: dict[str, np.ndarray], layer: int, head: int) -> HeadSteps:
    """:func:`head_steps` for one head of an observation (:class:`model.observe.Observation`, which must hold
    q, k, v, z and attn_in) with that head's ``weights``; k and v are those of the head's key/value head."""
    return head_steps(
        obs.q[layer, head],
        obs.k[layer, obs.kv_head(head)],
        obs.v[layer, obs.kv_head(head)],
        obs.z[layer],
        obs.attn_in[layer],
        obs.score_matrix(layer, head),
        weights,
        scale=obs.options.scale,
        factor=obs.score_factor,
        softcap=obs.softcap,
    )


@dataclass
class QueryExplained:
    """How one query's weights arise. M keys, d_k dims."""

    q: np.ndarray  # (d_k,)
    k: np.ndarray  # (M, d_k)
    products: np.ndarray  # (M, d_k) q ⊙ k_j
    scores: np.ndarray  # (M,) sums of the products = q·k_j
    scaled: np.ndarray  # (M,) / sqrt(d_k); -inf where masked
    weights: np.ndarray  # (M,) softmax


def explain_query(
    q: np.ndarray,
    k: np.ndarray,
    query: int,
    masked_row: np.ndarray,
    scale: bool = True,
    factor: float = 0.0,
    softcap: float = 0.0,
):
    """q, k: (N, d_k); masked_row: (M,) the captured scores row (−inf marks blocked keys); ``factor``/``softcap``:
    the model's own score scale and cap (:func:`scaled_scores`)."""
    qi = q[query].astype(np.float64)
    products = qi[None, :] * k.astype(np.float64)
    scores = products.sum(-1)
    scaled = scaled_scores(scores, q.shape[-1], scale, factor, softcap)
    scaled = np.where(np.isneginf(masked_row), -np.inf, scaled)
    weights = softmax_rows(scaled[None])[0]
    f = np.float32
    return QueryExplained(
        qi.astype(f), k.astype(f), products.astype(f), scores.astype(f), scaled.astype(f), weights.astype(f)
    )
