"""Lesson experiments: each runs extra forward passes (a shuffled order, a padded batch, masked tokens).

Results are numpy arrays or small records; the model is never modified (interventions go through capture).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import torch

from model.analysis.decoder import induction_scores, previous_token_scores
from model.capture import run_with_cache
from model.io.tokenizer import Tokenizer
from model.transformer import Transformer


def _device(model: Transformer) -> torch.device:
    return next(model.parameters()).device


def permutation_check(
    model: Transformer,
    ids: list[int],
    special: list[bool],
    perm_seed: int = 0,
    positions: bool = False,
    layer: int = 0,
    causal: bool | None = None,
    scale: bool = True,
    ablate: tuple[tuple[int, int], ...] = (),
) -> dict[str, np.ndarray]:
    """Shuffle the ordinary tokens, run both orders, and undo the shuffle on the second pattern.

    Runs two forward passes (``causal``: the mask, None for the model's own; ``scale`` and ``ablate`` as in
    :class:`model.observe.Options`, so that both runs are the pages' own but for positions). Returns {"perm",
    "original" (H, N, N), "shuffled" (H, N, N), "unshuffled" (H, N, N), "max_diff" scalar}: with positions off and
    no causal mask, unshuffled equals original; a causal mask tells the orders apart by itself (a shuffle changes
    what each token sees).
    """
    n = len(ids)
    movable = [i for i in range(n) if not special[i]]
    rng = np.random.default_rng(perm_seed)
    perm = np.arange(n)
    if len(movable) > 1:
        shuffled = list(movable)
        while shuffled == movable:
            shuffled = list(rng.permutation(movable))
        perm[movable] = shuffled
    t = torch.tensor([ids])
    dev = _device(model)
    run = {"kinds": ["pattern"], "layers": [layer], "positions": positions, "causal": causal, "scale": scale}
    run["ablate"] = tuple(ablate)
    _, a = run_with_cache(model, t.to(dev), **run)
    _, b = run_with_cache(model, t[:, perm].to(dev), **run)
    pa = a.get("pattern", layer)[0].numpy()
    pb = b.get("pattern", layer)[0].numpy()
    inv = np.argsort(perm)
    unshuffled = pb[:, inv][:, :, inv]
    return {
        "perm": perm,
        "original": pa,
        "shuffled": pb,
        "unshuffled": unshuffled,
        "max_diff": np.float32(np.abs(unshuffled - pa).max()),
    }


CPU_FLOPS = 1.0e11  # multiply-adds × 2 per second of a forward pass on 2 cores (SmolLM2 at 512 tokens: 1.1 s)


def forward_seconds(cfg, n_tokens: int, rows: int = 1) -> float:
    """About how long a forward pass of ``rows`` texts of ``n_tokens`` takes on a 2-core CPU (a page says so before
    it starts a slow one): the projections' and feed-forward's multiply-adds, and the attention's N² ones."""
    ff = (3 if cfg.gated else 2) * cfg.d_model * cfg.d_ff
    attn = cfg.d_model * (2 * cfg.n_heads + 2 * cfg.kv_heads) * cfg.d_k
    per_token = cfg.n_layers * (ff + attn + 2 * n_tokens * cfg.n_heads * cfg.d_k)
    return 2 * rows * n_tokens * per_token / CPU_FLOPS


def padded_batch(
    model: Transformer, ids_a: list[int], ids_b: list[int], pad_id: int, layer: int
) -> dict[str, np.ndarray]:
    """Run two texts as one padded batch. Returns patterns (2, H, N, N), attention_mask (2, N) and, for
    the shorter text, the max difference between its padded and unpadded hidden states."""
    n = max(len(ids_a), len(ids_b))
    batch = torch.full((2, n), pad_id, dtype=torch.long)
    mask = torch.zeros(2, n, dtype=torch.long)
    for row, ids in enumerate((ids_a, ids_b)):
        batch[row, : len(ids)] = torch.tensor(ids)
        mask[row, : len(ids)] = 1
    dev = _device(model)
    hidden, trace = run_with_cache(model, batch.to(dev), mask.to(dev), kinds=["pattern"], layers=[layer])
    short = 0 if len(ids_a) <= len(ids_b) else 1
    m = int(mask[short].sum())
    alone, _ = run_with_cache(model, batch[short : short + 1, :m].to(dev), kinds=[])
    diff = (hidden[short, :m] - alone[0]).abs().max().item()
    return {
        "patterns": trace.get("pattern", layer).numpy(),
        "attention_mask": mask.numpy(),
        "padding_effect": np.float32(diff),
    }


def with_mask(ids: Sequence[int], positions: Sequence[int], mask_id: int) -> tuple[int, ...]:
    """``ids`` with the token at each of ``positions`` replaced by the mask token."""
    out = list(ids)
    for p in positions:
        out[p] = mask_id
    return tuple(out)


@dataclass(frozen=True)
class Prediction:
    position: int  # token index in the sequence
    tokens: tuple[str, ...]  # top-k candidates, best first
    probs: tuple[float, ...]


def masked_predictions(
    model: Transformer,
    ids: torch.Tensor,
    positions: list[int],
    id_to_token: Callable[[int], str],
    k: int = 5,
    ablate: tuple[tuple[int, int], ...] = (),
) -> list[Prediction]:
    """Top-k tokens with probabilities at each of ``positions`` of ids (1, N)."""
    if model.mlm is None:
        raise ValueError("this model has no masked-language-model head")
    if not positions:
        return []
    dev = _device(model)
    hidden, _ = run_with_cache(model, ids.to(dev), kinds=[], ablate=ablate)
    with torch.inference_mode():
        logits = model.mlm_logits(hidden[0, positions].to(dev)).float().cpu()
    probs = logits.softmax(-1)
    top = probs.topk(min(k, probs.size(-1)), dim=-1)
    return [
        Prediction(pos, tuple(id_to_token(int(i)) for i in idx), tuple(float(p) for p in val))
        for pos, idx, val in zip(positions, top.indices, top.values)
    ]


def repeated_random_tokens(tokenizer: Tokenizer, period: int, seed: int = 0) -> tuple[str, list[int], int]:
    """``period`` random whole-word tokens, then the same again: the text an induction head completes.

    Returns (text, ids with the tokenizer's special tokens, position of the first token of the first copy).
    Only words that encode to exactly themselves are drawn (" galaxies" in byte-level BPE, "galaxies" in
    WordPiece), so the text typed back into the box gives the same tokens."""
    if period < 2:
        raise ValueError("the repeated block needs at least 2 tokens")
    rng = np.random.default_rng(seed)
    vocab = tokenizer.vocab_size
    chosen: list[int] = []
    pieces: list[str] = []
    for _ in range(400 * period):
        if len(chosen) == period:
            break
        i = int(rng.integers(min(1000, vocab // 4), vocab))
        label = tokenizer.id_to_token(i)
        word = label.strip()
        if i in chosen or label.startswith("##") or not (word.isascii() and word.isalpha() and len(word) > 2):
            continue
        piece = label if label.startswith(" ") else " " + label
        enc = tokenizer.encode(piece)
        if [t for t, sp in zip(enc.ids, enc.special, strict=True) if not sp] == [i]:
            chosen.append(i)
            pieces.append(piece)
    if len(chosen) < period:
        raise ValueError("this tokenizer has too few whole-word tokens to draw a random sequence from")
    text = "".join(pieces * 2)
    enc = tokenizer.encode(text)
    start = enc.special.index(False)
    if list(enc.ids[start : start + 2 * period]) != chosen * 2:
        raise ValueError("the repeated sequence did not tokenise back to itself")
    return text, list(enc.ids), start


def induction_run(model: Transformer, tokenizer: Tokenizer, period: int = 24, seed: int = 0) -> dict:
    """Run a repeated random sequence and score every head as an induction head.

    Returns {"text", "ids", "tokens", "start", "period", "patterns" (L, H, N, N), "induction" (L, H),
    "previous" (L, H)}; N = 2·period plus the tokenizer's special tokens."""
    text, ids, start = repeated_random_tokens(tokenizer, period, seed)
    dev = _device(model)
    _, trace = run_with_cache(model, torch.tensor([ids], device=dev), kinds=["pattern"])
    patterns = trace.stack("pattern")[:, 0].float().numpy()  # (L, H, N, N)
    return {
        "text": text,
        "ids": ids,
        "tokens": [tokenizer.id_to_token(i) for i in ids],
        "start": start,
        "period": period,
        "patterns": patterns,
        "induction": induction_scores(patterns, period, start),
        "previous": previous_token_scores(patterns),
    }
