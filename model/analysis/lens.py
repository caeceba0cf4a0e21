"""The logit lens and direct logit attribution: what the residual stream already says about the output.

Logit lens (nostalgebraist, 2020): the stream after the embeddings and after every layer, read through the
final norm and the model's own head as if it were the last layer. The last layer's reading is the model's output.
Direct logit attribution is model/analysis/dla.py, exported here too (the documented API: docs/research.md).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch

from model.analysis.batches import pad_batch, readable_batch
from model.analysis.dla import (
    LogitAttribution,
    attribution_problem,
    direct_logit_attribution,
    direct_logit_attribution_batch,
    mean_attribution,
)
from model.intervene import readout, run_with_hooks
from model.transformer import Transformer


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


OUTPUT = -1  # a target: at each position, the model's own output there
__all__ = [
    "OUTPUT", "Lens", "LogitAttribution", "attribution_problem", "direct_logit_attribution",
    "direct_logit_attribution_batch", "final_norm", "logit_lens", "logit_lens_batch", "mean_attribution",
    "mean_target_prob", "pad_batch",
]  # fmt: skip


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
    """Read the stream at ``positions`` (default: all) through the final norm and the head, layer by layer;
    ``target``: a token id whose rank and probability are followed, or OUTPUT: at each position the token the model
    outputs there (one pass finds it and follows it).

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
        if target is not None:  # OUTPUT (−1): each position's own output, its final row's likeliest token
            which = logits[-1].argmax(-1) if target == OUTPUT else torch.full((len(where),), target)  # (P,)
            index = which[None, :, None].expand(logits.size(0), -1, 1)  # (L + 1, P, 1)
            chosen = logits.gather(-1, index)  # (L + 1, P, 1)
            rank = ((logits > chosen).sum(-1) + 1).numpy()
            prob = probs.gather(-1, index)[..., 0].numpy()
    return Lens(where, top.indices.numpy(), top.values.numpy(), target, rank, prob)


def logit_lens_batch(
    model: Transformer,
    rows: Sequence[Sequence[int]],
    targets: Sequence[int] | None = None,
    k: int = 5,
    pad_id: int | None = None,
) -> list[Lens]:
    """The logit lens at each text's last token for a batch of texts of any lengths, in one forward pass (padded
    on the right, masked): one :class:`Lens` per text (one position), following each text's own target.
    ``mean_target_prob`` averages the targets' probabilities layer by layer."""
    ids, mask, lengths = readable_batch(rows, model, pad_id)
    last = lengths - 1  # (B,)
    kept: dict[int, torch.Tensor] = {}

    def keep(x: torch.Tensor, hook) -> None:  # (B, N, d) -> (B, d) at each text's last token
        kept[-1 if hook.layer is None else hook.layer] = x[torch.arange(len(last)), last.to(x.device)].detach()

    with torch.no_grad():
        hooked = [("hook_embed", keep), (lambda n: n.endswith(".hook_resid_post"), keep)]
        run_with_hooks(model, ids, hooked, attention_mask=mask)
        streams = torch.stack([kept[i] for i in range(-1, model.cfg.n_layers)])  # (L + 1, B, d_model)
        logits = readout(model, final_norm(model, streams)).float().cpu()  # (L + 1, B, V)
        probs = logits.softmax(-1)
        top = probs.topk(min(k, probs.size(-1)), dim=-1)
    out = []
    for b in range(len(last)):
        rank = prob = target = None
        if targets is not None:
            target = int(targets[b])
            chosen = logits[:, b, target : target + 1]  # (L + 1, 1)
            rank = ((logits[:, b] > chosen).sum(-1) + 1).numpy()[:, None]  # (L + 1, 1)
            prob = probs[:, b, target].numpy()[:, None]
        where = np.asarray([int(last[b])])
        out.append(Lens(where, top.indices[:, b : b + 1].numpy(), top.values[:, b : b + 1].numpy(), target, rank, prob))
    return out


def mean_target_prob(lenses: Sequence[Lens]) -> np.ndarray:
    """(L + 1,): each layer's probability of each text's target, averaged over the batch."""
    return np.mean([lens.target_prob[:, 0] for lens in lenses], axis=0)
