"""Texts of any lengths as one padded batch, for the instruments that read a batch in one forward pass."""

from __future__ import annotations

from collections.abc import Sequence

import torch

from model.transformer import Transformer


def pad_batch(rows: Sequence[Sequence[int]], pad_id: int = 0) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Texts of any lengths as one batch, padded on the right (a causal model's real tokens never see the padding,
    and their positions do not move): ids (B, N), attention mask (B, N) with 1 = real token, lengths (B,)."""
    rows = [list(r) for r in rows]
    if not rows:
        raise ValueError("a batch needs at least one text")
    n = max(1, max(len(r) for r in rows))
    ids = torch.full((len(rows), n), int(pad_id), dtype=torch.long)
    mask = torch.zeros(len(rows), n, dtype=torch.long)
    for b, row in enumerate(rows):
        ids[b, : len(row)] = torch.tensor(row)
        mask[b, : len(row)] = 1
    return ids, mask, torch.tensor([len(r) for r in rows])


def readable_batch(rows, model: Transformer, pad_id: int | None) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """pad_batch for an instrument that reads each text at a token: every text needs one."""
    if any(len(r) == 0 for r in rows):
        raise ValueError("every text of the batch needs at least one token")
    return pad_batch(rows, model.cfg.pad_token_id if pad_id is None else pad_id)
