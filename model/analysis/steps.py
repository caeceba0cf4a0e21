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
    masked: np.ndarray  # (N, N) scaled (+ position), with -inf where blocked: the scores the softmax reads
    pattern: np.ndarray  # (N, N) softmax (over the keys and the head's learned sink when it has one)
    z: np.ndarray  # (N, d_k) pattern @ v: this head's output
    concat: np.ndarray  # (N, d_model) every head's z side by side
    out: np.ndarray  # (N, d_model) concat @ W_o (+ b): the attention sublayer's output
    # (N, N) what the scores add beyond q·k: a relative-position bias (T5, MPNet) or DeBERTa's c2p + p2c terms
    # (0 where blocked); None when the scores are q·k alone
    position: np.ndarray | None = None
    sink: np.ndarray | None = None  # (N,) each row's share taken by the learned sink (gpt-oss): pattern rows sum
    #                                 to 1 − it; None without a sink


def softmax_rows(s: np.ndarray) -> np.ndarray:
    """Row softmax that maps an all −inf row to zeros (as the model does)."""
    s = np.asarray(s, dtype=np.float64)
    dead = ~np.isfinite(s).any(-1, keepdims=True) | np.all(np.isneginf(s), -1, keepdims=True)
    m = np.where(dead, 0.0, np.max(np.where(np.isneginf(s), -np.inf, s), -1, keepdims=True))
    e = np.where(np.isneginf(s), 0.0, np.exp(s - m))
    out = e / np.maximum(e.sum(-1, keepdims=True), 1e-300)
    return np.where(dead, 0.0, out)


def softmax_with_sink_rows(s: np.ndarray, sink: float) -> tuple[np.ndarray, np.ndarray]:
    """Row softmax over the keys and one more logit that belongs to no token (gpt-oss's learned sink, as
    model.attention.softmax_with_sink): s (…, M) -> (weights (…, M) summing to 1 − share, share (…,))."""
    s = np.asarray(s, dtype=np.float64)
    m = np.maximum(np.max(np.where(np.isneginf(s), -np.inf, s), -1, keepdims=True), sink)  # (…, 1), finite
    e = np.where(np.isneginf(s), 0.0, np.exp(s - m))  # (…, M)
    e_sink = np.exp(sink - m)  # (…, 1)
    total = e.sum(-1, keepdims=True) + e_sink
    return e / total, (e_sink / total)[..., 0]


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
    terms: bool = False,
) -> HeadSteps:
    """Recompute one head step by step from captured q/k/v (N, d_k), all heads' z (H, N, d_k), the
    attention input x (N, d_model) and the scores (N, N, −inf where masked); ``factor``/``softcap``: the
    model's own score scale and cap (:func:`scaled_scores`). ``terms``: the scores were captured and hold a term
    beyond q·k (a relative-position bias, DeBERTa's position terms), recovered as scores − scaled q·k; a
    learned sink (``weights["sink"]``, gpt-oss) takes its share of every row's softmax."""
    d_k = q.shape[-1]
    qk = q.astype(np.float64) @ k.astype(np.float64).T  # (N, N)
    scaled = scaled_scores(qk, d_k, scale, factor, softcap)
    blocked = np.isneginf(scores)
    position = np.where(blocked, 0.0, np.asarray(scores, dtype=np.float64) - scaled) if terms else None
    masked = np.where(blocked, -np.inf, scaled if position is None else scaled + position)
    sink_logit, share = weights.get("sink"), None
    if sink_logit is None:
        pattern = softmax_rows(masked)
    else:
        pattern, share = softmax_with_sink_rows(masked, float(sink_logit))
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
        None if position is None else position.astype(f),
        None if share is None else share.astype(f),
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
        terms=obs.score_terms and obs.scores is not None,
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
    position: np.ndarray | None = None  # (M,) the scores' position term (HeadSteps.position's row); None: none
    sink: float | None = None  # the share of the row the learned sink takes; None: no sink


def explain_query(
    q: np.ndarray,
    k: np.ndarray,
    query: int,
    masked_row: np.ndarray,
    scale: bool = True,
    factor: float = 0.0,
    softcap: float = 0.0,
    position: np.ndarray | None = None,
    sink: float | None = None,
):
    """q, k: (N, d_k); masked_row: (M,) the captured scores row (−inf marks blocked keys); ``factor``/``softcap``:
    the model's own score scale and cap (:func:`scaled_scores`); ``position`` (M,): the row's position term, added
    to the scaled scores before the softmax; ``sink``: the head's learned sink logit (its share of the softmax)."""
    qi = q[query].astype(np.float64)
    products = qi[None, :] * k.astype(np.float64)
    scores = products.sum(-1)
    scaled = scaled_scores(scores, q.shape[-1], scale, factor, softcap)
    blocked = np.isneginf(masked_row)
    scaled = np.where(blocked, -np.inf, scaled)
    pos = None if position is None else np.where(blocked, 0.0, np.asarray(position, dtype=np.float64))
    total = scaled if pos is None else scaled + pos
    if sink is None:
        weights, share = softmax_rows(total[None])[0], None
    else:
        both, shares = softmax_with_sink_rows(total[None], float(sink))
        weights, share = both[0], float(shares[0])
    f = np.float32
    return QueryExplained(
        qi.astype(f),
        k.astype(f),
        products.astype(f),
        scores.astype(f),
        scaled.astype(f),
        weights.astype(f),
        None if pos is None else pos.astype(f),
        share,
    )
