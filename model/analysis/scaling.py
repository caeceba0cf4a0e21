"""Why attention divides by √d_k, on random vectors."""

from __future__ import annotations

import math

import numpy as np
import torch

D_KS = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024)


def scaling_demo(d_ks=D_KS, n: int = 32, samples: int = 64, seed: int = 0) -> dict[str, np.ndarray]:
    """Random q and k with independent N(0, 1) entries ((samples, n, d_k) each) at growing d_k, softmax with
    and without 1/√d_k.

    Returns arrays over d_k: mean row entropy, mean max weight and mean Frobenius norm of the softmax
    Jacobian (diag(p) − ppᵀ), for "scaled" and "unscaled"; also "d_k", "n" and "samples" (the setup).
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
    result["n"], result["samples"] = np.array(n), np.array(samples)
    return result
