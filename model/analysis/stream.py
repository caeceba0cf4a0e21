"""The residual stream through the blocks: its size after every sublayer and what each sublayer adds to it.

A pre-norm block (x + f(LN(x))) keeps the stream an identity path: every sublayer adds to it and nothing
rescales it until the final norm, so its norm grows layer by layer. A post-norm block (LN(x + f(x)), BERT)
puts the norm on the stream itself: its size is reset after every sublayer. These numbers show which.

Shapes: L layers of P sublayers each (attention and feed-forward; an encoder–decoder's decoder has cross-attention
between them), N tokens, S = P·L + 1 stream points (the embedding, then after each sublayer).
Norms are computed inside the hooks, so memory stays one layer's activations whatever L is.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

import numpy as np
import torch

from model.capture import hook_points
from model.errors import foreign_module


@dataclass(frozen=True)
class Stream:
    """‖·‖ of the residual stream along the blocks, per token."""

    labels: tuple[str, ...]  # (S,) "embedding", "L0 attention", "L0 feed-forward", …
    norm: np.ndarray  # (S, N) the stream's norm at each point
    added: np.ndarray  # (P·L, N) the norm of what each sublayer adds (post-norm: f(x), before the norm)
    read: np.ndarray  # (P·L, N) the norm of the stream that sublayer adds to (its input x)
    post_norm: bool  # the norm sits on the stream (post-norm blocks) rather than on each branch
    final: np.ndarray | None  # (N,) after the final norm; None without one
    parts: tuple[str, ...] = ("attention", "feed-forward")  # (P,) each block's sublayers, in order

    @property
    def ratio(self) -> np.ndarray:
        """(P·L, N) ‖added‖ / ‖stream it joins‖: how much each sublayer changes the stream."""
        return self.added / np.maximum(self.read, 1e-12)

    @property
    def n_layers(self) -> int:
        return (len(self.labels) - 1) // len(self.parts)


def residual_stream(
    model: torch.nn.Module,
    ids: list[int],
    *,
    causal: bool | None = None,
    scale: bool = True,
    positions: bool = True,
) -> Stream:
    """Run ``ids`` once and measure the stream. Pre-norm (also sandwich and parallel blocks): what a sublayer
    adds is the difference of the stream after it and before it (resid_pre, resid_mid, resid_mid_cross,
    resid_post) exactly; post-norm: the sublayer's own output (attn_out, the cross-attention's, mlp_out), which is
    added before the norm rescales the sum."""
    points = hook_points(model)
    if not points or not hasattr(model, "cfg"):
        raise TypeError(foreign_module(model, "residual_stream"))
    if model.training:
        raise ValueError("residual_stream needs a model in eval() mode")
    cfg = model.cfg
    post = cfg.norm == "post"
    L = cfg.n_layers
    parts = ("attention", "cross-attention", "feed-forward") if cfg.cross_attention else ("attention", "feed-forward")
    P = len(parts)
    owner = threading.get_ident()
    held: dict[str, torch.Tensor] = {}  # this layer's stream before the sublayer (pre-norm differences)
    norm: dict[int, torch.Tensor] = {}  # stream point -> (N,)
    added: dict[int, torch.Tensor] = {}  # sublayer -> (N,)
    read: dict[int, torch.Tensor] = {}
    after = {"mid": 0, "mid_cross": 1, "post": -1}  # the sublayer (of P; −1: the last) each stream point follows
    own = {"attn": 0, "cross": 1, "ff": -1}  # the sublayer whose own output each post-norm hook holds

    def size(t: torch.Tensor) -> torch.Tensor:
        return t[0].double().norm(dim=-1).cpu()  # (N,)

    def hook(layer: int, what: str):
        def record(_mod, _inp, out: torch.Tensor) -> None:
            if threading.get_ident() != owner:
                return
            if what == "pre":
                if layer == 0:
                    norm[0] = size(out)
                read[P * layer] = size(out)
                held["x"] = out
            elif what in after:  # the stream after sublayer i of this block: point P·layer + i + 1
                sub = P * layer + after[what] % P
                norm[sub + 1] = size(out)
                if sub + 1 < P * (layer + 1):
                    read[sub + 1] = norm[sub + 1]
                if not post:
                    added[sub] = size(out - held["x"])
                held["x"] = out
            else:  # a post-norm sublayer's own output: what it adds before its norm
                added[P * layer + own[what] % P] = size(out)

        return record

    names = {"pre": "hook_resid_pre", "mid": "hook_resid_mid", "post": "hook_resid_post"}
    names |= {"mid_cross": "hook_resid_mid_cross", "cross": "cross.hook_out"} if cfg.cross_attention else {}
    names |= {"attn": "attn.hook_out", "ff": "hook_mlp_out"} if post else {}
    handles = []
    try:
        for layer in range(L):
            for what, path in names.items():
                handles.append(points[f"blocks.{layer}.{path}"].register_forward_hook(hook(layer, what)))
        device = next(model.parameters()).device
        with torch.inference_mode():
            out = model(torch.tensor([ids], device=device), causal=causal, scale=scale, positions=positions)
    finally:
        for handle in handles:
            handle.remove()
        held.clear()
    labels = ["embedding"] + [f"L{i} {part}" for i in range(L) for part in parts]
    final = size(out).numpy() if cfg.use_final_layer_norm else None
    return Stream(
        labels=tuple(labels),
        norm=torch.stack([norm[s] for s in range(P * L + 1)]).numpy(),
        added=torch.stack([added[s] for s in range(P * L)]).numpy(),
        read=torch.stack([read[s] for s in range(P * L)]).numpy(),
        post_norm=post,
        final=final,
        parts=parts,
    )


def embedding_parts(model: torch.nn.Module, ids: list[int]) -> dict[str, np.ndarray | None]:
    """What the first layer starts from, piece by piece, each (N, d_model): "token" (the embedding rows, × √d
    when the config scales them, × the embedding multiplier), "position" (what the position table adds; None for
    RoPE or no positions), "added" (token + position + type: the sum before any embedding norm) and "sum" (the
    model's own embedding output: that sum, then the embedding norm if any)."""
    cfg = model.cfg
    device = next(model.parameters()).device
    x = torch.tensor([ids], device=device)
    with torch.inference_mode():
        token = model.tok_emb(x)
        if cfg.scale_embeddings:
            token = token * cfg.d_model**0.5
        token = token * cfg.embed_multiplier  # Granite's embedding_multiplier (1 elsewhere)
        position = model.pos_enc(torch.zeros_like(token)) if model.pos_enc is not None else None
        total = model.embed(x)
        added = token + (position if position is not None else 0)
        if model.type_emb is not None:
            added = added + model.type_emb(torch.zeros_like(x))
    out = {"token": token, "position": position, "added": added, "sum": total}
    return {k: None if v is None else v[0].float().cpu().numpy() for k, v in out.items()}
