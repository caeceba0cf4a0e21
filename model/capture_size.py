"""How many bytes a capture keeps, from the config and the token count alone (admission control asks before any
forward pass runs)."""

from __future__ import annotations

from model.config import TransformerConfig


def capture_bytes(cfg: TransformerConfig, n: int, kinds) -> int:
    """Bytes of float32 activations a capture of ``kinds`` keeps for ``n`` tokens (one text, every layer)."""
    per_token = {"q": cfg.n_heads * cfg.d_k, "z": cfg.n_heads * cfg.d_k, "k": cfg.kv_heads * cfg.d_k}
    per_token |= {"v": per_token["k"], "pattern": cfg.n_heads * n, "scores": cfg.n_heads * n}  # (H, N) per token
    per_layer = 4 * n * sum(per_token.get(k, cfg.d_model) for k in set(kinds) if k not in ("sink", "expert_weights"))
    total = cfg.n_layers * per_layer
    if "sink" in kinds and cfg.attn_sinks:  # (H,) per token, every layer
        total += 4 * cfg.n_layers * n * cfg.n_heads
    if "expert_weights" in kinds and cfg.n_experts:  # (E,) per token, the mixture layers only
        total += 4 * sum(cfg.is_moe(i) for i in range(cfg.n_layers)) * n * cfg.n_experts
    return total
