"""Identity modules that mark the activations worth seeing (after TransformerLens' HookPoint), and their names."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import torch
from torch import nn


class HookPoint(nn.Identity):
    """Returns its input unchanged; forward hooks registered on it see (and may replace) the value.

    The module path of a HookPoint (``blocks.0.attn.hook_pattern``) is its public name.
    """

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x


#: kind -> hook path below ``blocks.{layer}``, with the shape each holds.
KIND_PATHS: dict[str, str] = {
    "attn_in": "hook_attn_in",  # (B, N, d_model), the attention sublayer's input
    "q": "attn.hook_q",  # (B, H, N, d_k)
    "k": "attn.hook_k",  # (B, H, M, d_k)
    "v": "attn.hook_v",  # (B, H, M, d_k)
    "scores": "attn.hook_scores",  # (B, H, N, M), scaled, masked cells -inf
    "pattern": "attn.hook_pattern",  # (B, H, N, M)
    "z": "attn.hook_z",  # (B, H, N, d_k), per-head output before W_o
    "attn_out": "attn.hook_out",  # (B, N, d_model)
    "cross_pattern": "cross.hook_pattern",  # (B, H, N, S): a decoder's cross-attention on the encoder's S tokens
    "c2p": "attn.hook_c2p",  # (B, H, N, N): DeBERTa's content→position term of the scores, scaled
    "p2c": "attn.hook_p2c",  # (B, H, N, N): its position→content term
    "resid_pre": "hook_resid_pre",  # (B, N, d_model)
    "resid_mid": "hook_resid_mid",  # (B, N, d_model)
    "resid_mid_cross": "hook_resid_mid_cross",  # (B, N, d_model): a decoder's stream after its cross-attention
    "resid_post": "hook_resid_post",  # (B, N, d_model)
    "mlp_in": "hook_mlp_in",  # (B, N, d_model), what the feed-forward reads (LN(x) in a pre-norm block)
    "mlp_hidden": "ff.hook_hidden",  # (B, N, d_ff), after the activation (SwiGLU: silu(gate) · up)
    "mlp_out": "hook_mlp_out",  # (B, N, d_model), the feed-forward's output before it joins the stream
    "router_logits": "ff.hook_router",  # (B, N, E), a mixture-of-experts layer's router (model/moe.py)
    "expert_weights": "ff.hook_weights",  # (B, N, E), each expert's weight on each token: k nonzero per row
    "sink": "attn.hook_sink",  # (B, H, N), the share of each row a learned sink takes (gpt-oss)
}
KINDS: tuple[str, ...] = tuple(KIND_PATHS)


def hook_name(kind: str, layer: int) -> str:
    """``hook_name("pattern", 0) == "blocks.0.attn.hook_pattern"``."""
    if kind not in KIND_PATHS:
        raise ValueError(f"unknown capture kind {kind!r}; choose from {', '.join(KINDS)}")
    return f"blocks.{layer}.{KIND_PATHS[kind]}"


def select_names(names: Iterable[str], layers: Iterable[int] | None, kinds: Iterable[str] | None) -> list[str]:
    """The hook names of ``kinds`` (None: every kind) in ``layers`` (None: every layer) the model offers."""
    kinds = list(KINDS) if kinds is None else list(kinds)
    for kind in kinds:
        hook_name(kind, 0)  # validates the kind
    available = set(names)
    n_layers = len({n.split(".")[1] for n in available if n.startswith("blocks.")})
    layers = list(range(n_layers)) if layers is None else list(layers)
    for layer in layers:
        if not 0 <= layer < n_layers:
            raise ValueError(f"layer {layer} does not exist; the model has {n_layers} layers")
    return [hook_name(k, i) for i in layers for k in kinds if hook_name(k, i) in available]


def named_hooks(points: Mapping[str, HookPoint], names_filter) -> list[str]:
    """The hook names ``names_filter`` keeps, as TransformerLens's ``run_with_cache`` takes it: a callable
    ``name -> bool``, one name, or a list of names (unknown names are refused, with where the names come from)."""
    if callable(names_filter):
        return [n for n in points if names_filter(n)]
    wanted = [names_filter] if isinstance(names_filter, str) else list(names_filter)
    unknown = [n for n in wanted if n not in points]
    if unknown:
        raise ValueError(
            f"no hook point {', '.join(map(repr, unknown[:3]))} in this model; names look like "
            f"{next(iter(points), 'blocks.0.attn.hook_pattern')!r} (model.capture.hook_points(model) lists them)"
        )
    return [n for n in points if n in set(wanted)]
