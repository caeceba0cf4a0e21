"""The residual stream taken apart, from a capture (TransformerLens's ``ActivationCache`` helpers):

    hidden, trace = run_with_cache(model, ids, kinds=RESID_KINDS)
    stream, labels = accumulated_resid(trace)            # (L + 1, B, N, d): entering each layer, then the end
    parts, labels = decompose_resid(model, trace)        # (1 + 2L, B, N, d): embeddings, each attention, each MLP
    heads, labels = stack_head_results(model, trace)     # (L·H, B, N, d): what each head writes

``decompose_resid``'s parts sum to the final stream exactly: each sublayer's part is what it added to the stream
(resid_mid − resid_pre, resid_post − resid_mid; a decoder that reads a source: its cross-attention's part,
resid_mid_cross − resid_mid, apart), so Granite's multiplier, sandwich norms and GPT-NeoX's parallel blocks are all
in it. ``stack_head_results`` splits the attention's part by head: z_h · W_O,h (× Granite's
multiplier), which with the output bias sums to the attention's part; it needs the attention output to join the
stream as it is (no sandwich norm). Both need pre-norm blocks: a post-norm block renormalises the stream, which
then is no sum of parts. Every result is on the CPU, as the trace holds it.
"""

from __future__ import annotations

import torch

from model.capture import Trace
from model.transformer import Transformer

RESID_KINDS = ("resid_pre", "resid_mid", "resid_mid_cross", "resid_post", "z")


def _layers(trace: Trace, kind: str) -> list[int]:
    layers = trace.layers(kind)
    if not layers or layers != list(range(len(layers))):
        raise KeyError(f"capture {kind!r} at every layer: run_with_cache(model, ids, kinds={list(RESID_KINDS)})")
    return layers


def _pre_norm(model: Transformer, what: str) -> None:
    if model.cfg.norm != "pre":
        raise ValueError(f"{what} needs pre-norm blocks: a post-norm block renormalises the stream, no sum of parts")


def accumulated_resid(trace: Trace) -> tuple[torch.Tensor, list[str]]:
    """The stream entering each layer and leaving the last: (L + 1, B, N, d_model), labels "0_pre" … "final_post"."""
    layers = _layers(trace, "resid_pre")
    last = trace.get("resid_post", layers[-1])
    stack = torch.stack([trace.get("resid_pre", i) for i in layers] + [last])
    return stack, [f"{i}_pre" for i in layers] + ["final_post"]


def decompose_resid(model: Transformer, trace: Trace) -> tuple[torch.Tensor, list[str]]:
    """The final stream as a sum: the embeddings, then what each attention (and cross-attention, in a decoder that
    reads a source) and each feed-forward added, (1 + 2L or 1 + 3L, B, N, d_model) with labels "embed",
    "0_attn_out", ("0_cross_attn_out",) "0_mlp_out", …"""
    _pre_norm(model, "decompose_resid")
    layers = _layers(trace, "resid_pre")
    cross = model.cfg.cross_attention
    if cross:
        _layers(trace, "resid_mid_cross")
    parts, labels = [trace.get("resid_pre", 0)], ["embed"]
    for i in layers:
        pre, mid, post = (trace.get(k, i) for k in ("resid_pre", "resid_mid", "resid_post"))
        parts.append(mid - pre)
        labels.append(f"{i}_attn_out")
        if cross:  # what cross-attention added sits between the two
            mid, before = trace.get("resid_mid_cross", i), mid
            parts.append(mid - before)
            labels.append(f"{i}_cross_attn_out")
        parts.append(post - mid)
        labels.append(f"{i}_mlp_out")
    return torch.stack(parts), labels


def stack_head_results(model: Transformer, trace: Trace) -> tuple[torch.Tensor, list[str]]:
    """What each head writes into the stream, z_h · W_O,h: (L·H, B, N, d_model), labels "L0H0" …, layer by layer.
    With each layer's output bias (``model.blocks[i].attn.w_o.bias``, × the residual multiplier) the heads of a
    layer sum to that layer's attention part of :func:`decompose_resid`."""
    _pre_norm(model, "stack_head_results")
    if model.cfg.sandwich_norm:
        raise ValueError("stack_head_results needs the attention output to join the stream as it is (no sandwich norm)")
    out, labels = [], []
    for i in _layers(trace, "z"):
        attn = model.blocks[i].attn
        z = trace.get("z", i).double()  # (B, H, N, d_k)
        w_o = attn.w_o.weight.detach().double().cpu().view(attn.d_model, attn.n_heads, attn.d_k)  # (d, H, d_k)
        out.append(torch.einsum("bhnk,dhk->hbnd", z, w_o) * model.cfg.residual_multiplier)  # (H, B, N, d)
        labels += [f"L{i}H{h}" for h in range(attn.n_heads)]
    return torch.cat(out).to(trace.get("z", 0).dtype), labels
