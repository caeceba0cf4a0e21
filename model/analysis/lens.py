"""The logit lens and direct logit attribution: what the residual stream already says about the output.

Logit lens (nostalgebraist, 2020): the stream after the embeddings and after every layer, read through the
final norm and the model's own head as if it were the last layer. The last layer's reading is the model's output.

Direct logit attribution (Elhage et al., 2021): the final stream is the sum of what each part wrote into it —
the embeddings, every head's output z_h · W_O[h], every attention bias, every feed-forward. With the final norm's
scale frozen at its value on this text (it divides by one number per position, the stream's RMS or standard
deviation), the norm is linear in the stream, so each part's dot product with the unembedding direction of the
answer (minus a foil's) is its share of the logit, and the shares sum to the logit exactly (before any
soft-capping). Needs a linear head (a decoder's unembedding) and pre-norm blocks (a post-norm block renormalises
the stream, so earlier parts no longer add up).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch

from model.intervene import readout, run_with_hooks
from model.transformer import RMSNorm, Transformer


@dataclass(frozen=True)
class Lens:
    """Every layer's reading of the stream at some positions. Row 0 is the embeddings, row l + 1 after layer l."""

    positions: np.ndarray  # (P,) positions read
    top_ids: np.ndarray  # (L + 1, P, k) the k likeliest tokens, best first
    top_probs: np.ndarray  # (L + 1, P, k)
    target: int | None  # a token id followed through the layers
    target_rank: np.ndarray | None  # (L + 1, P), 1 = the likeliest token
    target_prob: np.ndarray | None  # (L + 1, P)

    @property
    def labels(self) -> list[str]:
        return ["embeddings", *(f"after layer {i}" for i in range(len(self.top_ids) - 1))]


def _streams(model: Transformer, ids: Sequence[int], positions: np.ndarray) -> torch.Tensor:
    """The stream after the embeddings and after each layer at the given positions: (L + 1, P, d_model)."""
    kept: dict[int, torch.Tensor] = {}
    where = torch.as_tensor(positions)

    def keep(x: torch.Tensor, hook) -> None:
        kept[-1 if hook.layer is None else hook.layer] = x[0, where].detach()

    run_with_hooks(model, ids, [("hook_embed", keep), (lambda n: n.endswith(".hook_resid_post"), keep)])
    return torch.stack([kept[i] for i in range(-1, model.cfg.n_layers)])


def final_norm(model: Transformer, x: torch.Tensor) -> torch.Tensor:
    return model.ln_f(x) if model.ln_f is not None else x


def logit_lens(
    model: Transformer,
    ids: Sequence[int],
    positions: Sequence[int] | None = None,
    target: int | None = None,
    k: int = 5,
) -> Lens:
    """Read the stream at ``positions`` (default: all) through the final norm and the head, layer by layer.

    For a decoder the reading at position i is the next-token guess after i; for a masked-language model it is
    the guess for position i itself (the [MASK] slot). Works for every model with a head (post-norm BERT too:
    its blocks end in a norm, so each layer's stream is already on the head's scale)."""
    n = len(ids)
    where = np.arange(n) if positions is None else np.asarray([p % n for p in positions])
    with torch.no_grad():
        streams = _streams(model, ids, where)  # (L + 1, P, d_model)
        logits = readout(model, final_norm(model, streams)).float()  # (L + 1, P, V)
        probs = logits.softmax(-1)
        top = probs.topk(min(k, probs.size(-1)), dim=-1)
        rank = prob = None
        if target is not None:
            chosen = logits[..., target : target + 1]  # (L + 1, P, 1)
            rank = ((logits > chosen).sum(-1) + 1).numpy()
            prob = probs[..., target].numpy()
    return Lens(where, top.indices.numpy(), top.values.numpy(), target, rank, prob)


@dataclass(frozen=True)
class LogitAttribution:
    """Each part's direct share of one logit (or a logit difference) at one position."""

    position: int
    target: int
    foil: int | None  # None: the logit itself; else logit(target) − logit(foil)
    heads: np.ndarray  # (L, H) what each head wrote, z_h · W_O[h] (its value bias included)
    value_biases: np.ndarray  # (L, H) the part of ``heads`` that is the same on every text: the constant value
    # (the attention norm's bias through W_V, plus b_V) that every key hands over, a pattern's row summing to 1.
    # TransformerLens folds it into b_O: its heads are heads − value_biases
    mlps: np.ndarray  # (L,)
    attn_biases: np.ndarray  # (L,) each layer's W_O bias (0 without one)
    embed: float  # token (and position, type) embeddings
    norm_bias: float  # the final LayerNorm's bias (0 for RMSNorm)
    logit: float  # what the model computes (before soft-capping)

    @property
    def total(self) -> float:
        parts = self.heads.sum() + self.mlps.sum() + self.attn_biases.sum()
        return float(parts + self.embed + self.norm_bias)


def attribution_problem(model: Transformer) -> str | None:
    """Why direct logit attribution does not apply to this model, or None."""
    cfg = model.cfg
    if not cfg.lm_head:
        return "direct logit attribution needs a linear unembedding: a decoder's next-token head"
    if cfg.norm != "pre":
        return "direct logit attribution needs pre-norm blocks: a post-norm block renormalises the stream"
    if cfg.sandwich_norm:
        return "direct logit attribution needs sublayer outputs that join the stream as they are (no sandwich norm)"
    return None


def _direction(model: Transformer, target: int, foil: int | None) -> torch.Tensor:
    w = model.tok_emb.weight if model.lm_head is None else model.lm_head.weight  # (V, d_model)
    u = w[target].double()
    u = u - w[foil].double() if foil is not None else u
    return u / model.cfg.logit_divisor  # Granite's logits_scaling divides every logit


def _frozen_norm(model: Transformer, x: torch.Tensor) -> tuple[torch.Tensor, float, bool]:
    """The final norm at the stream x (d,) as a linear map: (gamma (d,), inv_scale, centre), where the norm is
    gamma ⊙ (x − mean(x) if centre else x) · inv_scale, plus the LayerNorm's bias."""
    ln = model.ln_f
    if ln is None:
        return torch.ones_like(x), 1.0, False
    if isinstance(ln, RMSNorm):
        gamma = ln.weight.double() + ln.offset
        return gamma, float(torch.rsqrt(x.pow(2).mean() + ln.eps)), False
    var = x.var(unbiased=False)
    return ln.weight.double(), float(torch.rsqrt(var + ln.eps)), True


def direct_logit_attribution(
    model: Transformer, ids: Sequence[int], target: int, foil: int | None = None, position: int = -1
) -> LogitAttribution:
    """Each head's, each feed-forward's and the embeddings' direct share of logit(target) [− logit(foil)] at
    ``position`` (default: the last), through the final norm frozen at this text's scale. Computed in float64;
    the parts sum to ``logit`` to float precision (tested)."""
    problem = attribution_problem(model)
    if problem:
        raise ValueError(problem)
    cfg, n = model.cfg, len(ids)
    pos = position % n
    kept: dict[str, torch.Tensor] = {}

    def keep(x: torch.Tensor, hook) -> None:
        kept[hook.name] = x[0, ..., pos, :].detach().double() if x.dim() == 4 else x[0, pos].detach().double()

    names = ["hook_embed", "hook_final"]
    names += [f"blocks.{i}.{p}" for i in range(cfg.n_layers) for p in ("attn.hook_z", "hook_mlp_out")]
    names.append(f"blocks.{cfg.n_layers - 1}.hook_resid_post")
    with torch.no_grad():
        run_with_hooks(model, ids, [(name, keep) for name in names])
        u = _direction(model, target, foil)  # (d,)
        gamma, inv, centre = _frozen_norm(model, kept[f"blocks.{cfg.n_layers - 1}.hook_resid_post"])
        w_eff = u * gamma * inv  # (d,) what a part's vector is dotted with

        def share(c: torch.Tensor) -> torch.Tensor:  # c: (..., d) -> (...)
            c = c - c.mean(-1, keepdim=True) if centre else c
            return c @ w_eff

        def joined(c: torch.Tensor) -> torch.Tensor:  # a sublayer's output as it joins the stream (Granite: × m)
            return share(c) * cfg.residual_multiplier

        heads, mlps, biases, value_biases = [], [], [], []
        for i, block in enumerate(model.blocks):
            attn = block.attn
            z = kept[f"blocks.{i}.attn.hook_z"]  # (H, d_k)
            w_o = attn.w_o.weight.double().view(cfg.d_model, attn.n_heads, attn.d_k)  # (d_model, H, d_k)
            per_head = torch.einsum("hk,dhk->hd", z, w_o)  # (H, d_model)
            heads.append(joined(per_head))
            # the value every key hands over whatever the text: W_V of the norm's bias, plus b_V
            beta = getattr(block.ln1, "bias", None) if cfg.norm == "pre" else None
            const = attn.w_v(beta) if beta is not None else attn.w_v.bias
            if const is not None:  # (H_kv · d_k) -> each query head's (H, d_k), through W_O
                const = attn.expand_kv(const.double().view(1, attn.n_kv_heads, 1, attn.d_k))[0, :, 0]  # (H, d_k)
                value_biases.append(joined(torch.einsum("hk,dhk->hd", const, w_o)))
            else:
                value_biases.append(torch.zeros(attn.n_heads, dtype=torch.float64))
            b = attn.w_o.bias
            biases.append(float(joined(b.double())) if b is not None else 0.0)
            mlps.append(float(joined(kept[f"blocks.{i}.hook_mlp_out"])))
        embed = float(share(kept["hook_embed"]))
        beta = getattr(model.ln_f, "bias", None) if model.ln_f is not None else None
        norm_bias = float(u @ beta.double()) if beta is not None else 0.0
        logit = float(kept["hook_final"] @ u)
    return LogitAttribution(
        pos,
        target,
        foil,
        torch.stack(heads).numpy(),
        torch.stack(value_biases).numpy(),
        np.asarray(mlps),
        np.asarray(biases),
        embed,
        norm_bias,
        logit,
    )
