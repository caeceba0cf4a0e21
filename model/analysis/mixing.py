"""Context mixing beyond attention weights, per layer, token × token: norm-based attention, ALTI, value zeroing.

- Norm-based (Kobayashi et al., 2020, "Attention is Not Only a Weight"): head h moves ‖α_ij^h f^h(x_j)‖ from
  token j to token i, f^h(x) = (x W_v^h + b_v^h) W_o^h — the value bias included, the output bias b_o excluded
  (it is the same for every j), as in the paper; the layer total is ‖Σ_h α_ij^h f^h(x_j)‖.
- ALTI (Ferrando et al., 2022, "Measuring the Mixing of Contextual Information in the Transformer"): the
  attention block's output y_i = Σ_j T_i(x_j) (+ biases) with the residual counted as token i's own term and a
  post-norm LayerNorm split linearly over the terms (its scale taken from the whole sum); the contribution of j
  is max(0, ‖y_i‖₁ − ‖y_i − T_i(x_j)‖₁), rows normalised to sum to 1. A pre-norm block's LayerNorm acts on
  each token alone before its value is formed, so there the split is exact; a norm on the attention's output
  (Gemma's sandwich, OLMo 2) is split like the post-norm one, and Granite's residual multiplier scales the terms.
- Value zeroing (Mohebbi et al., 2023): set token j's value vector (every head) to zero in layer l, recompute
  that layer's output from the same input, and take the cosine distance of each token's new output from the
  original; rows normalised to sum to 1. 1 − cos is formed in float64 from the model's outputs: a row whose raw
  distances are tiny (MiniLM's [CLS] in its first layers: 1e-5…6e-4) is otherwise float32 rounding noise, and
  normalising the row spreads that noise to every later layer through the rollout.

Everything is computed in the model's own precision (float64 for a float64 model) and never below float32.

Across layers, contribution matrices are multiplied as in rollout (:func:`model.analysis.flow.aggregate`).
Hooks act only on the calling thread and are removed in ``finally``; nothing here changes the model.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F

from model.capture import capture, hook_points
from model.intervene import heads_off
from model.norms import RMSNorm, gain
from model.transformer import Transformer

ROW_CHUNK = 128  # query rows per step when a (rows, N, d_model) tensor is formed: bounds memory at 512 tokens
KINDS = ("resid_pre", "v", "pattern", "resid_mid", "resid_post")  # what context_mixing captures
ZERO_BATCH = 16  # value-zeroing variants recomputed per forward pass of one block
#: seconds per unit of work on this project's 2 CPU cores (bench/RESULTS.md, "Beyond the weights"): norm-based and
#: ALTI cost L·N²·d_model·H units (MiniLM at 512 tokens: 5.2 s; SmolLM2 at 256: 7.4 s), value zeroing
#: L·N²·d_model·(12·d_model + 2N) (MiniLM at 128 tokens: 4.4 s)
CPU_SECONDS_PER_UNIT = {"alti": 0.72e-9, "value_zeroing": 0.024e-9}


def mixing_seconds(cfg, n_tokens: int, value_zeroing: bool) -> float:
    """About how long :func:`context_mixing` takes on a 2-core CPU for a text of ``n_tokens`` (the page says
    so before it starts a long one)."""
    work = cfg.n_layers * n_tokens**2 * cfg.d_model
    seconds = CPU_SECONDS_PER_UNIT["alti"] * work * cfg.n_heads
    if value_zeroing:
        seconds += CPU_SECONDS_PER_UNIT["value_zeroing"] * work * (12 * cfg.d_model + 2 * n_tokens)
    return seconds


def work_dtype(model: Transformer) -> torch.dtype:
    """The precision the measures are computed in: the model's own, float32 for half-precision models."""
    dtype = next(model.parameters()).dtype
    return torch.float64 if dtype == torch.float64 else torch.float32


@dataclass(frozen=True)
class Mixing:
    """Per-layer context-mixing matrices of one text (in :func:`work_dtype`), rows = receiver i, columns = source j.

    attention: head-mean weights (L, N, N); norm_heads: ‖α f(x)‖ per head (L, H, N, N); norm: ‖Σ_h α f(x)‖
    (L, N, N); alti: ALTI contributions, rows sum to 1 (L, N, N); value_zeroing: rows sum to 1 (L, N, N), or
    None when not asked for."""

    attention: np.ndarray
    norm_heads: np.ndarray
    norm: np.ndarray
    alti: np.ndarray
    value_zeroing: np.ndarray | None


def _per_head_values(model: Transformer, layer: int, v: torch.Tensor) -> torch.Tensor:
    """f^h(x_j) = v_j^h W_o^h for every head: v (H_kv, N, d_k) -> (H, N, d_model)."""
    attn = model.blocks[layer].attn
    v = attn.expand_kv(v[None])[0]  # (H, N, d_k)
    dtype = work_dtype(model)
    w_o = attn.w_o.weight.detach().to("cpu", dtype).view(attn.d_model, attn.n_heads, attn.d_k)  # (d_model, H, d_k)
    return torch.einsum("hnk,dhk->hnd", v.to(dtype), w_o)  # (H, N, d_model)


def _split_norm(terms: torch.Tensor, whole: torch.Tensor, ln: torch.nn.Module, dtype: torch.dtype) -> None:
    """A norm on a sum of terms (R, N, d), split linearly over them with its scale taken from the whole sum
    ``whole`` (R, d), as ALTI splits a post-norm LayerNorm: RMSNorm γ ⊙ T / rms(whole), LayerNorm γ ⊙ (T −
    mean T) / σ(whole); the norm's own bias belongs to no token. In place."""
    if isinstance(ln, RMSNorm):
        scale = torch.rsqrt(whole.pow(2).mean(-1, keepdim=True) + ln.eps)  # (R, 1)
    else:
        scale = torch.rsqrt(whole.var(-1, unbiased=False, keepdim=True) + ln.eps)  # (R, 1)
        terms.sub_(terms.mean(-1, keepdim=True))
    terms.mul_(gain(ln).to("cpu", dtype) * scale[:, None])


def alti_terms(block, t: torch.Tensor, x: torch.Tensor, rows: slice, b_o: torch.Tensor, dtype) -> None:
    """What each token j gives the attention block's output y_i (resid_mid), in place: t (R, N, d) holds
    Σ_h α_ij^h f^h(x_j) for the rows ``rows`` of x (N, d); b_o (d,). Pre-norm: y = x + m · N(Σ_j t_ij + b_o), N a
    norm on the output (Gemma's sandwich, OLMo 2) or none, m Granite's residual multiplier (else 1); post-norm:
    y = LN(x + Σ_j t_ij + b_o). The residual is token i's own term; a norm is split linearly over the terms,
    its scale taken from the whole sum, so the terms sum to y but for the biases' part."""
    own = (torch.arange(rows.stop - rows.start), torch.arange(rows.start, rows.stop))
    if block.norm == "pre":
        if block.ln1_post is not None:
            _split_norm(t, t.sum(1) + b_o, block.ln1_post, dtype)
        t.mul_(block.res)
        t[own] += x[rows]
    else:
        t[own] += x[rows]
        _split_norm(t, t.sum(1) + b_o, block.ln1, dtype)


def _l1_contributions(terms: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """ALTI's max(0, ‖y‖₁ − ‖y − T_j‖₁), normalised: terms (R, N, d), y (R, d) -> (R, N). Overwrites ``terms``
    (in place: at 512 tokens each temporary would be 50 MB)."""
    distance = terms.sub_(y[:, None]).abs_().sum(-1)  # (R, N)
    c = (y.abs().sum(-1, keepdim=True) - distance).clamp_min(0)
    return c / c.sum(-1, keepdim=True).clamp_min(1e-12)


def _layer_mixing(
    model: Transformer, layer: int, acts: dict[str, torch.Tensor], off: list[int] = ()
) -> tuple[torch.Tensor, ...]:
    """(norm_heads (H, N, N), norm (N, N), alti (N, N)) of one layer from its captured activations; the heads
    ``off`` (switched off: their output zeroed) move nothing."""
    block, dtype = model.blocks[layer], work_dtype(model)
    alpha = acts["pattern"].to(dtype)  # (H, N, N)
    if len(off):
        alpha = alpha.clone()
        alpha[list(off)] = 0.0
    fx = _per_head_values(model, layer, acts["v"])  # (H, N, d)
    x = acts["resid_pre"].to(dtype)  # (N, d)
    norm_heads = alpha * fx.norm(dim=-1)[:, None, :]  # (H, N, N)
    n = x.size(0)
    norm, alti = torch.empty(n, n, dtype=dtype), torch.empty(n, n, dtype=dtype)
    bias = block.attn.w_o.bias
    b_o = bias.detach().to("cpu", dtype) if bias is not None else torch.zeros(x.size(1), dtype=dtype)
    for start in range(0, n, ROW_CHUNK):
        rows = slice(start, min(n, start + ROW_CHUNK))
        t = torch.einsum("hij,hjd->ijd", alpha[:, rows], fx)  # (R, N, d): what each j sends to each i
        norm[rows] = t.norm(dim=-1)
        alti_terms(block, t, x, rows, b_o, dtype)
        alti[rows] = _l1_contributions(t, acts["resid_mid"].to(dtype)[rows])
    return norm_heads, norm, alti


@contextlib.contextmanager
def _zero_values(model: Transformer, layer: int, positions: torch.Tensor) -> Iterator[None]:
    """Inside the block, batch row b of layer ``layer`` sees token positions[b]'s value vector zeroed (every
    key/value head). The hook lives only inside the block."""
    point = hook_points(model)[f"blocks.{layer}.attn.hook_v"]
    owner = threading.get_ident()

    def hook(_mod, _inp, v: torch.Tensor) -> torch.Tensor | None:  # v: (B, H_kv, M, d_k)
        if threading.get_ident() != owner:
            return None
        v = v.clone()
        v[torch.arange(v.size(0)), :, positions] = 0.0
        return v

    handle = point.register_forward_hook(hook)
    try:
        yield
    finally:
        handle.remove()


def _value_zeroing(
    model: Transformer,
    layer: int,
    x: torch.Tensor,
    original: torch.Tensor,
    mask,
    scale: bool = True,
    positions: bool = True,
    off: tuple[tuple[int, int], ...] = (),
) -> torch.Tensor:
    """Value zeroing of one layer: x (N, d) the layer's input, original (N, d) its output -> (N, N) float64, rows
    sum 1. The cosine distance is taken in float64 from the model's outputs (see the module note). The block
    reruns as it ran: ``positions`` (RoPE, a relative bias) and its heads ``off`` as the options had them."""
    n = x.size(0)
    out = torch.empty(n, n, dtype=torch.float64)
    reference = original.to("cpu", torch.float64)[None]  # (1, N, d)
    # the relative bias (T5, MPNet): without it the block is not the one that ran, unless positions were off
    inputs = model.block_inputs(n) if positions else {"bias": None, "rel": None}
    for start in range(0, n, ZERO_BATCH):
        js = torch.arange(start, min(n, start + ZERO_BATCH))
        with _zero_values(model, layer, js), heads_off(model, off):
            many = x[None].expand(len(js), -1, -1)  # (J, N, d)
            block = model.blocks[layer]
            changed = block(many, mask=mask, scale=scale, positions=positions, layer=layer, **inputs)  # (J, N, d)
        cos = F.cosine_similarity(changed.to("cpu", torch.float64), reference, dim=-1)  # (J, N)
        out[:, js] = (1 - cos).T  # (N, J)
    out = out.clamp_min(0)
    return out / out.sum(-1, keepdim=True).clamp_min(1e-12)


def context_mixing(
    model: Transformer,
    ids: list[int],
    *,
    value_zeroing: bool = True,
    causal: bool | None = None,
    scale: bool = True,
    positions: bool = True,
    ablate: tuple[tuple[int, int], ...] = (),
) -> Mixing:
    """Every per-layer mixing measure of one text. ids: the token ids (N,). Value zeroing costs N/ZERO_BATCH
    forward passes of each block: pass ``value_zeroing=False`` to skip it. ``causal`` (None: the model's own mask),
    ``scale``, ``positions`` and ``ablate`` (heads switched off: they move nothing) as in
    :class:`model.observe.Options`: the run the attention pages draw, measured."""
    if model.training:
        raise ValueError("context_mixing needs a model in eval() mode")
    device = next(model.parameters()).device
    batch = torch.tensor([list(ids)], device=device)
    with torch.inference_mode():
        with heads_off(model, ablate), capture(model, kinds=KINDS) as trace:
            model(batch, causal=causal, scale=scale, positions=positions)
        L = len(model.blocks)
        acts = [{k: trace.get(k, layer)[0] for k in KINDS} for layer in range(L)]
        off = [[h for lay, h in ablate if lay == layer] for layer in range(L)]  # each layer's heads switched off
        masks = model.build_masks(batch.size(1), None, model.cfg.causal if causal is None else causal, device, 0)
        zeroed = []
        if value_zeroing:
            for layer in range(L):
                x, y = (acts[layer][k].to(device) for k in ("resid_pre", "resid_post"))
                pairs = tuple((layer, h) for h in off[layer])
                zeroed.append(_value_zeroing(model, layer, x, y, masks[layer], scale, positions, pairs).cpu())
        parts = [_layer_mixing(model, layer, acts[layer], off[layer]) for layer in range(L)]

    dtype = work_dtype(model)

    def stack(t) -> np.ndarray:
        return torch.stack(list(t)).to(dtype).numpy()

    return Mixing(
        attention=stack(a["pattern"].to(dtype).mean(0) for a in acts),
        norm_heads=stack(p[0] for p in parts),
        norm=stack(p[1] for p in parts),
        alti=stack(p[2] for p in parts),
        value_zeroing=stack(zeroed) if value_zeroing else None,
    )
