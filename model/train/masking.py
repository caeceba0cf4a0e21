"""Turning documents into training windows and BERT-style masked inputs."""

from __future__ import annotations

import torch

from model.io.tokenizer import Tokenizer

FIRST_ORDINARY_ID = 999  # BERT's uncased vocabulary: ids below are [PAD], [unused…], [UNK], [CLS], [SEP], [MASK]


def token_stream(tok: Tokenizer, docs: list[str]) -> torch.Tensor:
    """All documents as one id stream, separated by [SEP]."""
    sep = tok.token_id("[SEP]")
    ids: list[int] = []
    for enc in tok.inner.encode_batch(docs, add_special_tokens=False):
        ids.extend(enc.ids)
        ids.append(sep)
    return torch.tensor(ids, dtype=torch.long)


def windows(stream: torch.Tensor, starts: torch.Tensor, length: int, cls: int, sep: int) -> torch.Tensor:
    """[CLS] + stream[s : s + length - 2] + [SEP] for each start: (B, length)."""
    body = stream[starts[:, None] + torch.arange(length - 2)]  # (B, length - 2)
    b = starts.numel()
    return torch.cat([torch.full((b, 1), cls), body, torch.full((b, 1), sep)], dim=1)


def mask_tokens(
    ids: torch.Tensor, tok: Tokenizer, gen: torch.Generator, special: set[int], rate: float = 0.15
) -> tuple[torch.Tensor, torch.Tensor]:
    """BERT masking: choose ``rate`` of ordinary tokens; 80% -> [MASK], 10% a random ordinary token, 10% kept.

    Returns (inputs, labels) with label -100 where no prediction is scored.
    """
    maskable = ~torch.isin(ids, torch.tensor(sorted(special)))
    chosen = (torch.rand(ids.shape, generator=gen) < rate) & maskable
    labels = torch.where(chosen, ids, torch.full_like(ids, -100))
    roll = torch.rand(ids.shape, generator=gen)
    inputs = ids.clone()
    inputs[chosen & (roll < 0.8)] = tok.token_id("[MASK]")
    rand_pos = chosen & (roll >= 0.8) & (roll < 0.9)
    low = min(FIRST_ORDINARY_ID, tok.vocab_size - 1) if tok.vocab_size > FIRST_ORDINARY_ID else len(special)
    inputs[rand_pos] = torch.randint(low, tok.vocab_size, (int(rand_pos.sum()),), generator=gen)
    return inputs, labels
