"""Next-token predictions and step-by-step generation with a KV cache, for decoders (``cfg.lm_head``).

Generation feeds the prompt once, then one token per step: each step computes q, k, v for the newest token
only and reads every earlier key and value from :class:`model.attention.KVCache`. Every step records the
attention row of the query that made the prediction, per layer and head: what the model looked at to
choose the token it produced.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
import torch

from model.attention import KVCache
from model.capture import capture
from model.transformer import Transformer


@dataclass(frozen=True)
class Step:
    """One generated token. ``rows``: (L, H, M) attention of the predicting query over the M positions before
    the new token; ``top``: the most likely (token id, probability) after temperature."""

    token: int
    prob: float
    rows: np.ndarray
    top: tuple[tuple[int, float], ...]


def next_token_distribution(logits: torch.Tensor, temperature: float) -> torch.Tensor:
    """Probabilities (V,) from logits (V,); temperature 0 means greedy (all mass on the arg-max)."""
    if temperature < 0:
        raise ValueError("temperature must be 0 (greedy) or positive")
    logits = logits.float()
    if temperature == 0:
        out = torch.zeros_like(logits)
        out[logits.argmax()] = 1.0
        return out
    return torch.softmax(logits / temperature, dim=-1)


def next_token_predictions(
    model: Transformer, ids: torch.Tensor, temperature: float = 1.0, k: int = 10
) -> list[list[tuple[int, float]]]:
    """For every position of ids (1, N): the top-k (token id, probability) of the token that follows.

    temperature rescales the logits before the softmax (1 = the model's own distribution)."""
    dev = next(model.parameters()).device
    with torch.inference_mode():
        hidden = model(ids.to(dev))[0]  # (N, d_model)
    return predictions_from_hidden(model, hidden, temperature, k)


def predictions_from_hidden(
    model: Transformer, hidden, temperature: float = 1.0, k: int = 10
) -> list[list[tuple[int, float]]]:
    """The same from final hidden states (N, d_model) already computed (an observation's): no forward pass."""
    if not model.cfg.lm_head:
        raise ValueError("this model has no next-token head")
    emb = model.tok_emb.weight
    with torch.inference_mode():
        h = torch.tensor(np.asarray(hidden), dtype=emb.dtype, device=emb.device)  # a copy: cached arrays are read-only
        logits = model.lm_logits(h[None])[0].float().cpu()  # (N, V)
    probs = torch.softmax(logits / max(temperature, 1e-6), dim=-1)
    top = probs.topk(k, dim=-1)
    return [
        [(int(i), float(p)) for i, p in zip(idx, val, strict=True)]
        for idx, val in zip(top.indices.tolist(), top.values.tolist(), strict=True)
    ]


def stop_tokens(tokenizer) -> frozenset[int]:
    """End-of-turn and end-of-text ids of a chat model's tokenizer (generation stops at them)."""
    names = ("<|im_end|>", "<|endoftext|>", "</s>", "<|eot_id|>")
    return frozenset(i for i in (tokenizer.token_id(n) for n in names) if i is not None)


def generate(
    model: Transformer,
    ids: list[int],
    n_new: int,
    *,
    temperature: float = 0.0,
    seed: int = 0,
    stop: set[int] | frozenset[int] = frozenset(),
    use_cache: bool = True,
    k: int = 5,
) -> list[Step]:
    """Produce up to ``n_new`` tokens after ``ids``; stops early at a token in ``stop`` or at max_seq_len.

    With the cache, the prompt but its last token is read in one fused pass (memory linear in its length: a
    prompt of 8,192 tokens never forms an N × N matrix), then every step runs one query, the first step the
    prompt's last token, whose attention row is the one that produced the first new token. Rows of prompts
    longer than 512 tokens are kept in float16 (48 steps × 270 heads × 8,192 keys would be 0.4 GB in float32).
    ``use_cache=False`` reruns the whole sequence every step (the slow way, kept to prove the cache exact).
    """
    cfg = model.cfg
    if not cfg.lm_head or not cfg.causal:
        raise ValueError("generation needs a causal model with a next-token head")
    if not ids:
        raise ValueError("generation needs at least one prompt token")
    room = cfg.max_seq_len - len(ids)
    if room <= 0 < n_new:
        raise ValueError(
            f"the prompt's {len(ids):,} tokens fill the model's context of {cfg.max_seq_len:,}: nothing can follow; "
            "shorten the prompt"
        )
    if n_new > room:
        warnings.warn(
            f"only {room:,} of the {n_new:,} tokens asked for fit in the model's context of {cfg.max_seq_len:,} "
            f"(the prompt has {len(ids):,})",
            stacklevel=2,
        )
    n_new = max(0, min(n_new, room))
    dev = next(model.parameters()).device
    gen = torch.Generator().manual_seed(seed)
    cache = KVCache(cfg.n_layers) if use_cache else None
    seq = list(ids)
    steps: list[Step] = []
    feed = seq
    keep = np.float16 if len(ids) > 512 else np.float32
    with torch.inference_mode():
        if cache is not None and len(seq) > 1 and n_new > 0:
            model(torch.tensor([seq[:-1]], device=dev), cache=cache, fused=True)  # the prompt but its last token
            feed = seq[-1:]
        for _ in range(n_new):
            x = torch.tensor([feed], device=dev)
            with capture(model, kinds=["pattern"]) as trace:
                hidden = model(x, cache=cache)
            # (L, H, M): the newest query's row of every layer (only that row is copied, not the prompt's patterns)
            rows = torch.stack([trace.get("pattern", i)[0, :, -1, :] for i in range(cfg.n_layers)]).float().numpy()
            rows = rows.astype(keep, copy=False)
            logits = model.lm_logits(hidden[:, -1:])[0, 0].float().cpu()  # (V,)
            probs = next_token_distribution(logits, temperature)
            token = int(torch.multinomial(probs, 1, generator=gen)) if temperature > 0 else int(probs.argmax())
            shown = probs if temperature > 0 else torch.softmax(logits, -1)  # greedy: show the model's own odds
            top = shown.topk(k)
            steps.append(
                Step(
                    token=token,
                    prob=float(shown[token]),
                    rows=rows,
                    top=tuple((int(i), float(p)) for i, p in zip(top.indices, top.values, strict=True)),
                )
            )
            seq.append(token)
            if token in stop:
                break
            feed = [token] if use_cache else seq
    return steps
