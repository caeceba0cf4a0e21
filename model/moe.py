"""A mixture of experts in place of the feed-forward (Mixtral, Qwen3-MoE, gpt-oss), computed exactly: a router
scores the E experts for each token, the top k are run on it and their outputs mixed by the router's weights.

Shapes: B batch, N tokens, d d_model, E experts, k experts per token, f one expert's hidden width.
"""

from __future__ import annotations

import torch
from torch import nn

from model.config import TransformerConfig
from model.feedforward import gated
from model.hooks import HookPoint


class Experts(nn.Module):
    """E gated feed-forwards stored side by side: gate and up (E, f, d), down (E, d, f), optional biases."""

    def __init__(self, cfg: TransformerConfig) -> None:
        super().__init__()
        E, d, f = cfg.n_experts, cfg.d_model, cfg.expert_width
        self.gate = nn.Parameter(torch.empty(E, f, d))
        self.up = nn.Parameter(torch.empty(E, f, d))
        self.down = nn.Parameter(torch.empty(E, d, f))
        bias = cfg.expert_bias
        self.gate_bias = nn.Parameter(torch.zeros(E, f)) if bias else None
        self.up_bias = nn.Parameter(torch.zeros(E, f)) if bias else None
        self.down_bias = nn.Parameter(torch.zeros(E, d)) if bias else None
        self.activation, self.limit, self.alpha = cfg.activation, cfg.swiglu_limit, cfg.swiglu_alpha

    def reset_parameters(self) -> None:
        for w in (self.gate, self.up, self.down):
            for e in range(w.size(0)):
                nn.init.xavier_uniform_(w[e])
        for b in (self.gate_bias, self.up_bias, self.down_bias):
            if b is not None:
                nn.init.zeros_(b)

    def run(self, e: int, x: torch.Tensor) -> torch.Tensor:
        """Expert ``e`` on the tokens x (T, d) -> (T, d)."""
        g, u = x @ self.gate[e].t(), x @ self.up[e].t()  # (T, f) each
        if self.gate_bias is not None and self.up_bias is not None:
            g, u = g + self.gate_bias[e], u + self.up_bias[e]
        out = gated(self.activation, g, u, self.limit, self.alpha) @ self.down[e].t()  # (T, d)
        return out if self.down_bias is None else out + self.down_bias[e]


class MoE(nn.Module):
    """x (B, N, d) -> Σ over each token's k chosen experts of weight × expert(x) (B, N, d).

    Hooks: ``hook_router`` (B, N, E) the router's logits; ``hook_weights`` (B, N, E) the weight each expert gets on
    each token — the chosen k's (softmax over all E, renormalised over the k when ``router_norm_topk``), 0
    elsewhere. Editing ``hook_weights`` (an ablated expert, a forced choice) changes the mix the output is.
    """

    def __init__(self, cfg: TransformerConfig) -> None:
        super().__init__()
        self.k, self.norm_topk = cfg.experts_per_token, cfg.router_norm_topk
        self.router = nn.Linear(cfg.d_model, cfg.n_experts, bias=cfg.router_bias)  # (E, d)
        self.experts = Experts(cfg)
        self.hook_router = HookPoint()  # (B, N, E) logits
        self.hook_weights = HookPoint()  # (B, N, E) the mix: k nonzero per token

    def route(self, x: torch.Tensor) -> torch.Tensor:
        """x (B, N, d) -> the experts' weights (B, N, E), as transformers computes them (softmax in float32)."""
        logits = self.hook_router(self.router(x))  # (B, N, E)
        probs = torch.softmax(logits.float(), dim=-1)  # (B, N, E)
        top, idx = probs.topk(self.k, dim=-1)  # (B, N, k)
        if self.norm_topk:
            top = top / top.sum(-1, keepdim=True)
        weights = torch.zeros_like(probs).scatter(-1, idx, top)  # (B, N, E)
        return self.hook_weights(weights.to(x.dtype))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        B, N, d = x.shape
        weights = self.route(x).reshape(B * N, -1)  # (T, E)
        flat = x.reshape(B * N, d)  # (T, d)
        out = torch.zeros_like(flat)
        for e in torch.nonzero(weights.ne(0).any(0)).flatten().tolist():  # only the experts some token chose
            rows = torch.nonzero(weights[:, e].ne(0)).flatten()  # (T_e,)
            y = self.experts.run(e, flat[rows]) * weights[rows, e, None]  # (T_e, d)
            out.index_add_(0, rows, y.to(out.dtype))
        return out.reshape(B, N, d)  # (B, N, d)
