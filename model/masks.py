"""The masks attention reads, 0 = blocked: padding, the causal triangle, and sliding layers' windows."""

from __future__ import annotations

import torch

from model.config import TransformerConfig


def mask(
    n: int, attention_mask: torch.Tensor | None, causal: bool, device: torch.device, offset: int = 0
) -> torch.Tensor | None:
    """Combine padding (B, M) and causal masks into (B or 1, 1, N, M) with 0 = blocked, where the N queries sit at
    positions offset … offset + N − 1 and M = offset + N (``offset`` > 0 with a KV cache); None when nothing is
    blocked."""
    out = None
    if attention_mask is not None:
        out = attention_mask[:, None, None, :].to(torch.bool)  # (B, 1, 1, M)
    if causal:
        m = offset + n
        tri = torch.ones(n, m, dtype=torch.bool, device=device).tril(diagonal=offset)[None, None]  # (1, 1, N, M)
        out = tri if out is None else out & tri
    return out


def layer_masks(
    cfg: TransformerConfig,
    n: int,
    attention_mask: torch.Tensor | None,
    causal: bool,
    device: torch.device,
    offset: int = 0,
) -> list[torch.Tensor | None]:
    """One mask per layer: :func:`mask`'s, and for a sliding layer that mask with only the window left — causal: the
    ``sliding_window`` latest keys, the query's own included (key j > i − w, as Mistral); bidirectional: keys with
    |i − j| ≤ w // 2 (ModernBERT's local attention)."""
    full = mask(n, attention_mask, causal, device, offset)
    if "sliding" not in cfg.layer_types:
        return [full] * cfg.n_layers
    w = cfg.sliding_window
    i = torch.arange(offset, offset + n, device=device)[:, None]  # (N, 1) query positions
    j = torch.arange(offset + n, device=device)[None, :]  # (1, M) key positions
    near = (j > i - w) if causal else ((i - j).abs() <= w // 2)  # (N, M)
    window = near[None, None] if full is None else full & near[None, None]  # (B or 1, 1, N, M)
    return [window if cfg.is_sliding(layer) else full for layer in range(cfg.n_layers)]


def reachable(cfg: TransformerConfig, n: int, causal: bool, layer: int, through: bool = False) -> torch.Tensor:
    """(N, N) bool: the keys a query reads in ``layer`` (its causal triangle, its sliding window), or, ``through``
    the layers 0 … ``layer``, the tokens whose information can reach it by any path (the residual stream included):
    what a per-layer measure or a rollout can give anything to."""
    own = torch.eye(n, dtype=torch.bool)  # (N, N)
    every = torch.ones(n, n, dtype=torch.bool)  # (N, N): nothing blocked
    per_layer = [every if m is None else m[0, 0].cpu() for m in layer_masks(cfg, n, None, causal, "cpu")]
    if not through:
        return per_layer[layer]
    reach = own
    for m in per_layer[: layer + 1]:
        reach = ((m | own).float() @ reach.float()) > 0  # (N, N): one more layer's hop
    return reach
