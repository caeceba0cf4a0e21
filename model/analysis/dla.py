"""Direct logit attribution (Elhage et al., 2021): the final stream is the sum of what each part wrote into it —
the embeddings, every head's output z_h · W_O[h] (an encoder–decoder's cross-attention heads too), every attention
bias, every feed-forward. With the final norm's scale frozen at its value on this text (it divides by one number
per position, the stream's RMS or standard deviation), the norm is linear in the stream, so each part's dot
product with the unembedding direction of the answer (minus a foil's) is its share of the logit, and the shares
(with the head's own bias per token, BART's final_logits_bias) sum to the logit exactly (before any soft-capping).
Needs a linear head (a decoder's unembedding) and pre-norm blocks (a post-norm block renormalises the stream, so
earlier parts no longer add up). ``model.analysis.lens`` exports these names too.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch

from model.analysis.batches import readable_batch
from model.intervene import run_with_hooks
from model.norms import RMSNorm, gain
from model.transformer import Transformer


@dataclass(frozen=True)
class LogitAttribution:
    """Each part's direct share of one logit (or a logit difference) at one position."""

    position: int
    target: int
    foil: int | None  # None: the logit itself; else logit(target) − logit(foil)
    heads: np.ndarray  # (L, H) what each head wrote, z_h · W_O[h] (its value bias included)
    value_biases: np.ndarray  # (L, H) the part of ``heads`` that is the same on every text: the constant value
    # (the attention norm's bias through W_V, plus b_V) that every key hands over, times the row's weight on tokens
    # (1; less a learned sink's share).
    # TransformerLens folds it into b_O: its heads are heads − value_biases
    mlps: np.ndarray  # (L,)
    attn_biases: np.ndarray  # (L,) each layer's W_O biases, self- and cross-attention's (0 without one)
    embed: float  # token (and position, type) embeddings
    norm_bias: float  # the final LayerNorm's bias (0 for RMSNorm)
    logit: float  # what the model computes (before soft-capping)
    cross_heads: np.ndarray | None = None  # (L, H) what each cross-attention head wrote (an encoder–decoder's
    #                                        decoder: the source's share), its value bias included; None: none
    out_bias: float = 0.0  # the head's own bias per token (BART's final_logits_bias), part of ``logit``

    @property
    def total(self) -> float:
        parts = self.heads.sum() + self.mlps.sum() + self.attn_biases.sum()
        cross = 0.0 if self.cross_heads is None else self.cross_heads.sum()
        return float(parts + cross + self.embed + self.norm_bias + self.out_bias)


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
        return gain(ln), float(torch.rsqrt(x.pow(2).mean() + ln.eps)), False
    return gain(ln), float(torch.rsqrt(x.var(unbiased=False) + ln.eps)), True


def direct_logit_attribution(
    model: Transformer, ids: Sequence[int], target: int, foil: int | None = None, position: int = -1
) -> LogitAttribution:
    """Each head's, each feed-forward's and the embeddings' direct share of logit(target) [− logit(foil)] at
    ``position`` (default: the last), through the final norm frozen at this text's scale. Computed in float64;
    the parts sum to ``logit`` to float precision (tested)."""
    return direct_logit_attribution_batch(model, [ids], [target], None if foil is None else [foil], [position])[0]


def direct_logit_attribution_batch(
    model: Transformer,
    rows: Sequence[Sequence[int]],
    targets: Sequence[int],
    foils: Sequence[int] | None = None,
    positions: Sequence[int] | None = None,
    pad_id: int | None = None,
) -> list[LogitAttribution]:
    """:func:`direct_logit_attribution` for a batch of texts of any lengths in one forward pass (padded on the
    right, masked), each with its own target, foil and position (default: its last token); one result per text.
    ``mean_attribution`` averages them."""
    problem = attribution_problem(model)
    if problem:
        raise ValueError(problem)
    cfg = model.cfg
    ids, mask, lengths = readable_batch(rows, model, pad_id)
    B = ids.size(0)
    pos = torch.tensor(list(positions) if positions is not None else [-1] * B) % lengths  # (B,) each text's own
    rows_at = torch.arange(B)
    kept: dict[str, torch.Tensor] = {}

    def keep(x: torch.Tensor, hook) -> None:  # each text's own position: (B, H, d_k), (B, H) or (B, d)
        where, by_head = pos.to(x.device), x.dim() == 4 or hook.name.endswith("hook_sink")
        kept[hook.name] = (x[rows_at, :, where] if by_head else x[rows_at, where]).detach().double().cpu()

    names = ["hook_embed", "hook_final"]
    names += [f"blocks.{i}.{p}" for i in range(cfg.n_layers) for p in ("attn.hook_z", "hook_mlp_out")]
    names += [f"blocks.{i}.attn.hook_sink" for i in range(cfg.n_layers) if cfg.attn_sinks]
    names += [f"blocks.{i}.cross.hook_z" for i in range(cfg.n_layers) if cfg.cross_attention]
    names.append(f"blocks.{cfg.n_layers - 1}.hook_resid_post")
    with torch.no_grad():
        run_with_hooks(model, ids, [(name, keep) for name in names], attention_mask=mask)
        u = torch.stack(
            [_direction(model, int(t), None if foils is None else int(foils[b])) for b, t in enumerate(targets)]
        )
        u = u.cpu()  # (B, d)
        final = kept[f"blocks.{cfg.n_layers - 1}.hook_resid_post"]  # (B, d)
        norms = [_frozen_norm(model, final[b]) for b in range(B)]
        gamma = norms[0][0].cpu() if isinstance(norms[0][0], torch.Tensor) else torch.ones(final.size(1))
        inv = torch.tensor([n[1] for n in norms], dtype=torch.float64)  # (B,)
        centre = norms[0][2]
        w_eff = u * gamma.double()[None] * inv[:, None]  # (B, d) what a part's vector is dotted with

        def share(c: torch.Tensor) -> torch.Tensor:  # c: (B, ..., d) -> (B, ...), each text its own direction
            c = c - c.mean(-1, keepdim=True) if centre else c
            return torch.einsum("b...d,bd->b...", c, w_eff)

        def joined(c: torch.Tensor) -> torch.Tensor:  # a sublayer's output as it joins the stream (Granite: × m)
            return share(c) * cfg.residual_multiplier

        heads, mlps, biases, value_biases, cross = [], [], [], [], []
        for i, block in enumerate(model.blocks):
            # the value every key hands over whatever the text: W_V of the attention norm's bias, plus b_V
            beta = getattr(block.ln1, "bias", None) if cfg.norm == "pre" else None
            sink = kept.get(f"blocks.{i}.attn.hook_sink")  # (B, H): a learned sink's share of the row (gpt-oss)
            head, const, bias = _head_parts(block.attn, kept[f"blocks.{i}.attn.hook_z"], beta, joined, sink)
            heads.append(head)
            value_biases.append(const)
            if block.cross is not None:  # its keys and values read the encoder's output: no norm's bias in them
                head, _, cross_bias = _head_parts(block.cross, kept[f"blocks.{i}.cross.hook_z"], None, joined)
                cross.append(head)
                bias = bias + cross_bias
            biases.append(bias)
            mlps.append(joined(kept[f"blocks.{i}.hook_mlp_out"]))  # (B,)
        embed = share(kept["hook_embed"])  # (B,)
        beta = getattr(model.ln_f, "bias", None) if model.ln_f is not None else None
        norm_bias = u @ beta.double().cpu() if beta is not None else torch.zeros(B, dtype=torch.float64)
        out_bias = torch.zeros(B, dtype=torch.float64)
        if model.lm_bias is not None:  # BART's final_logits_bias: a part of its own, through the same divisor
            b_u = model.lm_bias.detach().double().cpu() / cfg.logit_divisor  # (V,)
            out_bias = torch.stack([b_u[int(t)] - (b_u[int(foils[b])] if foils is not None else 0.0)
                                    for b, t in enumerate(targets)])  # fmt: skip
        logit = (kept["hook_final"] * u).sum(-1) + out_bias  # (B,)
    heads_t, vb, mlps_t, biases_t = (torch.stack(x, 1) for x in (heads, value_biases, mlps, biases))  # (B, L, …)
    cross_t = torch.stack(cross, 1) if cross else None  # (B, L, H)
    return [
        LogitAttribution(
            int(pos[b]),
            int(targets[b]),
            None if foils is None else int(foils[b]),
            heads_t[b].numpy(),
            vb[b].numpy(),
            mlps_t[b].numpy(),
            biases_t[b].numpy(),
            float(embed[b]),
            float(norm_bias[b]),
            float(logit[b]),
            None if cross_t is None else cross_t[b].numpy(),
            float(out_bias[b]),
        )
        for b in range(B)
    ]


def _head_parts(attn, z: torch.Tensor, beta, joined, sink=None) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """One attention sublayer's parts: what each head wrote, z (B, H, d_k) through its W_O, and the part of it
    that is the same on every text (W_V of the norm's bias ``beta`` plus b_V, through W_O, times the row's weight on
    tokens: 1 less a learned ``sink``'s share (B, H), else 1): (B, H) each; and its W_O bias (B,). ``joined``: a
    sublayer's output vectors (B, …, d) -> their shares as they join the stream."""
    B, d = z.size(0), attn.w_o.weight.size(0)
    w_o = attn.w_o.weight.double().cpu().view(d, attn.n_heads, attn.d_k)  # (d_model, H, d_k)
    heads = joined(torch.einsum("bhk,dhk->bhd", z, w_o))  # (B, H)
    const = attn.w_v(beta) if beta is not None else attn.w_v.bias
    if const is not None:  # (H_kv · d_k) -> each query head's (H, d_k), through W_O
        const = attn.expand_kv(const.double().view(1, attn.n_kv_heads, 1, attn.d_k))[0, :, 0].cpu()
        values = joined(torch.einsum("hk,dhk->hd", const, w_o).expand(B, -1, -1))  # (B, H)
        values = values if sink is None else values * (1.0 - sink)
    else:
        values = torch.zeros(B, attn.n_heads, dtype=torch.float64)
    b = attn.w_o.bias
    bias = joined(b.double().cpu().expand(B, -1)) if b is not None else torch.zeros(B, dtype=torch.float64)
    return heads, values, bias


def mean_attribution(parts: Sequence[LogitAttribution]) -> dict[str, np.ndarray | float]:
    """The average over a batch's texts of each part's share (heads (L, H), mlps (L,), embed; cross_heads (L, H)
    for an encoder–decoder's decoder) and of the logit."""
    out = {
        "heads": np.mean([p.heads for p in parts], axis=0),
        "mlps": np.mean([p.mlps for p in parts], axis=0),
        "embed": float(np.mean([p.embed for p in parts])),
        "logit": float(np.mean([p.logit for p in parts])),
    }
    if parts and parts[0].cross_heads is not None:
        out["cross_heads"] = np.mean([p.cross_heads for p in parts], axis=0)
    return out
