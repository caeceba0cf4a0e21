"""The computations behind the "inside attention" pages, on captured arrays (numpy) and the model's weights.

Every function states its shapes; none runs a forward pass unless its name says so.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch

from model.encoder import TransformerEncoder


def head_weights(model: TransformerEncoder, layer: int, head: int) -> dict[str, np.ndarray]:
    """One head's slices of W_q, W_k, W_v (d_model, d_k) and of W_o (d_k, d_model), plus W_o's bias."""
    attn = model.blocks[layer].attn
    d_k = attn.d_k
    sl = slice(head * d_k, (head + 1) * d_k)

    def cols(lin: torch.nn.Linear) -> np.ndarray:
        return lin.weight.detach().cpu().float()[sl].T.numpy()  # (d_model, d_k)

    bias_o = attn.w_o.bias.detach().cpu().float().numpy() if attn.w_o.bias is not None else None
    return {
        "w_q": cols(attn.w_q),
        "w_k": cols(attn.w_k),
        "w_v": cols(attn.w_v),
        "w_o": attn.w_o.weight.detach().cpu().float()[:, sl].T.numpy(),  # (d_k, d_model)
        "w_o_full": attn.w_o.weight.detach().cpu().float().T.numpy(),  # (d_model, d_model)
        "b_o": bias_o,
    }


@dataclass
class PipelineSteps:
    """Each step of one head's attention for one text. N tokens, d_k head width."""

    x: np.ndarray  # (N, d_model) what the attention sublayer reads
    q: np.ndarray  # (N, d_k)
    k: np.ndarray  # (N, d_k)
    v: np.ndarray  # (N, d_k)
    qk: np.ndarray  # (N, N) raw dot products
    scaled: np.ndarray  # (N, N) divided by sqrt(d_k) (or not, if scaling is off)
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


def pipeline_steps(
    q: np.ndarray,
    k: np.ndarray,
    v: np.ndarray,
    z_all: np.ndarray,
    x: np.ndarray,
    scores: np.ndarray,
    weights: dict[str, np.ndarray],
    scale: bool = True,
) -> PipelineSteps:
    """Recompute one head step by step from captured q/k/v (N, d_k), all heads' z (H, N, d_k), the
    attention input x (N, d_model) and the captured scores (N, N, for the mask)."""
    d_k = q.shape[-1]
    qk = q.astype(np.float64) @ k.astype(np.float64).T  # (N, N)
    scaled = qk / math.sqrt(d_k) if scale else qk
    masked = np.where(np.isneginf(scores), -np.inf, scaled)
    pattern = softmax_rows(masked)
    z = pattern @ v.astype(np.float64)  # (N, d_k)
    H, N, _ = z_all.shape
    concat = np.asarray(z_all, dtype=np.float64).transpose(1, 0, 2).reshape(N, H * d_k)  # (N, d_model)
    out = concat @ weights["w_o_full"].astype(np.float64)
    if weights["b_o"] is not None:
        out = out + weights["b_o"]
    f = np.float32
    return PipelineSteps(
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


def analysis_steps(analysis, model: TransformerEncoder, layer: int, head: int) -> tuple[PipelineSteps, dict]:
    """:func:`pipeline_steps` for one head of a :class:`model.pipeline.Analysis`, plus that head's weights."""
    a = analysis
    w = head_weights(model, layer, head)
    steps = pipeline_steps(
        a.q[layer, head],
        a.k[layer, head],
        a.v[layer, head],
        a.z[layer],
        a.attn_in[layer],
        a.scores[layer, head],
        w,
        scale=a.options.scale,
    )
    return steps, w


@dataclass
class QueryExplained:
    """How one query's weights arise. M keys, d_k dims."""

    q: np.ndarray  # (d_k,)
    k: np.ndarray  # (M, d_k)
    products: np.ndarray  # (M, d_k) q ⊙ k_j
    scores: np.ndarray  # (M,) sums of the products = q·k_j
    scaled: np.ndarray  # (M,) / sqrt(d_k); -inf where masked
    weights: np.ndarray  # (M,) softmax


def explain_query(q: np.ndarray, k: np.ndarray, query: int, masked_row: np.ndarray, scale: bool = True):
    """q, k: (N, d_k); masked_row: (M,) the captured scores row (−inf marks blocked keys)."""
    qi = q[query].astype(np.float64)
    products = qi[None, :] * k.astype(np.float64)
    scores = products.sum(-1)
    scaled = scores / math.sqrt(q.shape[-1]) if scale else scores
    scaled = np.where(np.isneginf(masked_row), -np.inf, scaled)
    weights = softmax_rows(scaled[None])[0]
    f = np.float32
    return QueryExplained(
        qi.astype(f), k.astype(f), products.astype(f), scores.astype(f), scaled.astype(f), weights.astype(f)
    )


def pca_2d(points: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Project (P, D) points onto their first two principal components.

    Returns (coords (P, 2), explained variance ratio (2,)). Signs are fixed so the largest loading is
    positive (deterministic output).
    """
    x = np.asarray(points, dtype=np.float64)
    x = x - x.mean(0, keepdims=True)
    if x.shape[0] < 2:
        return np.zeros((x.shape[0], 2)), np.zeros(2)
    _, s, vt = np.linalg.svd(x, full_matrices=False)
    comps = vt[:2]
    signs = np.sign(comps[np.arange(len(comps)), np.abs(comps).argmax(1)])
    comps = comps * signs[:, None]
    coords = x @ comps.T
    var = s**2
    ratio = var[:2] / max(var.sum(), 1e-300)
    if coords.shape[1] < 2:
        coords = np.pad(coords, ((0, 0), (0, 2 - coords.shape[1])))
        ratio = np.pad(ratio, (0, 2 - len(ratio)))
    return coords, ratio


def value_contributions(pattern: np.ndarray, v: np.ndarray, w_o: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Norm-based attribution (Kobayashi et al., 2020): α_ij · ‖v_j W_o^h‖.

    pattern: (N, M); v: (M, d_k); w_o: (d_k, d_model). Returns (contributions (N, M), value norms (M,)).
    """
    norms = np.linalg.norm(v.astype(np.float64) @ w_o.astype(np.float64), axis=-1)  # (M,)
    return (pattern * norms[None, :]).astype(np.float32), norms.astype(np.float32)


def attention_rollout(patterns: np.ndarray, residual: float = 0.5) -> np.ndarray:
    """Abnar & Zuidema's rollout. patterns: (L, H, N, N) -> (N, N) from last-layer tokens to inputs.

    Each layer's head-mean is mixed with the identity (the residual stream), rows renormalised, then
    the layers are multiplied: R = Â_L … Â_1.
    """
    p = np.asarray(patterns, dtype=np.float64).mean(1)  # (L, N, N)
    n = p.shape[-1]
    rollout = np.eye(n)
    for layer in p:
        a = residual * np.eye(n) + (1 - residual) * layer
        a = a / np.maximum(a.sum(-1, keepdims=True), 1e-12)
        rollout = a @ rollout
    return rollout.astype(np.float32)


MAX_FLOW_TOKENS = 32


def attention_flow(patterns: np.ndarray, residual: float = 0.5, max_tokens: int = MAX_FLOW_TOKENS) -> np.ndarray:
    """Abnar & Zuidema's attention flow: max-flow from each last-layer token to each input token.

    patterns: (L, H, N, N). Capacities are the residual-mixed head-mean weights. Returns (N, N).
    Refuses sequences longer than ``max_tokens`` (N² max-flow problems grow quickly).
    """
    from scipy.sparse import csr_matrix
    from scipy.sparse.csgraph import maximum_flow

    p = np.asarray(patterns, dtype=np.float64).mean(1)
    L, n, _ = p.shape
    if n > max_tokens:
        raise ValueError(f"attention flow is limited to {max_tokens} tokens (this text has {n}); use rollout")
    unit = 10**6  # scipy's max-flow needs integer capacities
    rows, cols, caps = [], [], []
    for layer in range(L):
        a = residual * np.eye(n) + (1 - residual) * p[layer]
        a = a / np.maximum(a.sum(-1, keepdims=True), 1e-12)
        i, j = np.nonzero(a > 0)  # node (layer + 1, i) draws from node (layer, j) with capacity a[i, j]
        rows.append((layer + 1) * n + i)
        cols.append(layer * n + j)
        caps.append(np.maximum(1, np.rint(a[i, j] * unit)).astype(np.int32))
    rows, cols, caps = np.concatenate(rows), np.concatenate(cols), np.concatenate(caps)
    size = (L + 1) * n
    graph = csr_matrix((caps, (rows, cols)), shape=(size, size))
    flow = np.zeros((n, n))
    for i in range(n):
        for j in range(n):
            flow[i, j] = maximum_flow(graph, L * n + i, j).flow_value / unit
    return (flow / np.maximum(flow.sum(-1, keepdims=True), 1e-12)).astype(np.float32)


def scaling_demo(d_ks=(4, 16, 64, 256, 1024), n: int = 32, samples: int = 64, seed: int = 0) -> dict[str, np.ndarray]:
    """Random unit-variance q and k at growing d_k, softmax with and without 1/√d_k.

    Returns arrays over d_k: mean row entropy, mean max weight and mean Frobenius norm of the softmax
    Jacobian (diag(p) − ppᵀ), for "scaled" and "unscaled".
    """
    gen = torch.Generator().manual_seed(seed)
    out: dict[str, list[float]] = {
        f"{m}_{s}": [] for m in ("entropy", "max_weight", "gradient") for s in ("scaled", "unscaled")
    }
    for d in d_ks:
        q = torch.randn(samples, n, d, generator=gen, dtype=torch.float64)
        k = torch.randn(samples, n, d, generator=gen, dtype=torch.float64)
        raw = q @ k.transpose(-1, -2)
        for name, s in (("scaled", raw / math.sqrt(d)), ("unscaled", raw)):
            p = torch.softmax(s, -1)
            ent = -(torch.where(p > 0, p * p.clamp_min(1e-300).log(), 0.0)).sum(-1).mean()
            jac = torch.diag_embed(p) - p.unsqueeze(-1) * p.unsqueeze(-2)  # (S, N, N, N)
            out[f"entropy_{name}"].append(ent.item())
            out[f"max_weight_{name}"].append(p.amax(-1).mean().item())
            out[f"gradient_{name}"].append(jac.flatten(-2).norm(dim=-1).mean().item())
    result = {k: np.array(v) for k, v in out.items()}
    result["d_k"] = np.array(d_ks)
    return result


def permutation_check(
    model: TransformerEncoder,
    ids: list[int],
    special: list[bool],
    perm_seed: int = 0,
    positions: bool = False,
    layer: int = 0,
) -> dict[str, np.ndarray]:
    """Shuffle the ordinary tokens, run both orders, and undo the shuffle on the second pattern.

    Runs two forward passes. Returns {"perm", "original" (H, N, N), "shuffled" (H, N, N),
    "unshuffled" (H, N, N), "max_diff" scalar}: with positions off, unshuffled equals original.
    """
    from model.capture import run_with_cache

    n = len(ids)
    movable = [i for i in range(n) if not special[i]]
    rng = np.random.default_rng(perm_seed)
    perm = np.arange(n)
    if len(movable) > 1:
        shuffled = list(movable)
        while shuffled == movable:
            shuffled = list(rng.permutation(movable))
        perm[movable] = shuffled
    t = torch.tensor([ids])
    dev = next(model.parameters()).device
    _, a = run_with_cache(model, t.to(dev), kinds=["pattern"], layers=[layer], positions=positions)
    _, b = run_with_cache(model, t[:, perm].to(dev), kinds=["pattern"], layers=[layer], positions=positions)
    pa = a.get("pattern", layer)[0].numpy()
    pb = b.get("pattern", layer)[0].numpy()
    inv = np.argsort(perm)
    unshuffled = pb[:, inv][:, :, inv]
    return {
        "perm": perm,
        "original": pa,
        "shuffled": pb,
        "unshuffled": unshuffled,
        "max_diff": np.float32(np.abs(unshuffled - pa).max()),
    }


def positional_table(model: TransformerEncoder, n: int) -> tuple[str, np.ndarray]:
    """(kind, table) of what the model adds for position: sinusoidal/learned (n, d_model) or RoPE angles
    (n, d_k/2); ("none", empty) when it has none."""
    cfg = model.cfg
    n = min(n, cfg.max_seq_len)
    if cfg.positional in ("sinusoidal", "learned"):
        return cfg.positional, model.pos_enc.table[:n].detach().cpu().float().numpy()
    if cfg.positional == "rope":
        from model.positional import rope_angles

        return "rope", rope_angles(n, cfg.d_k, cfg.rope_base).numpy()
    return "none", np.zeros((n, 0), dtype=np.float32)


def padded_batch(
    model: TransformerEncoder, ids_a: list[int], ids_b: list[int], pad_id: int, layer: int
) -> dict[str, np.ndarray]:
    """Run two texts as one padded batch. Returns patterns (2, H, N, N), attention_mask (2, N) and, for
    the shorter text, the max difference between its padded and unpadded hidden states."""
    from model.capture import run_with_cache

    n = max(len(ids_a), len(ids_b))
    batch = torch.full((2, n), pad_id, dtype=torch.long)
    mask = torch.zeros(2, n, dtype=torch.long)
    for row, ids in enumerate((ids_a, ids_b)):
        batch[row, : len(ids)] = torch.tensor(ids)
        mask[row, : len(ids)] = 1
    dev = next(model.parameters()).device
    hidden, trace = run_with_cache(model, batch.to(dev), mask.to(dev), kinds=["pattern"], layers=[layer])
    short = 0 if len(ids_a) <= len(ids_b) else 1
    m = int(mask[short].sum())
    alone, _ = run_with_cache(model, batch[short : short + 1, :m].to(dev), kinds=[])
    diff = (hidden[short, :m] - alone[0]).abs().max().item()
    return {
        "patterns": trace.get("pattern", layer).numpy(),
        "attention_mask": mask.numpy(),
        "padding_effect": np.float32(diff),
    }
