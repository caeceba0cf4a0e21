"""How good a masked-language model is: held-out top-1/top-5 against a unigram guess, everyday-sentence
probes, everyday words kept whole, and what each head does on held-out text."""

from __future__ import annotations

import math
from collections import Counter

import numpy as np
import torch
import torch.nn.functional as F

from model.analysis.metrics import METRICS, head_metrics
from model.capture import run_with_cache
from model.io.tokenizer import Tokenizer
from model.train.english import EVERYDAY_WORDS, PROBE_SENTENCES
from model.train.masking import mask_tokens, windows
from model.transformer import Transformer


def evaluate_mlm(
    model: Transformer, tok: Tokenizer, stream: torch.Tensor, length: int, seed: int = 1, n_windows: int = 256
) -> dict[str, float]:
    """Held-out masked-token loss, top-1 and top-5 accuracy over fixed, seeded windows of ``stream``."""
    gen = torch.Generator().manual_seed(seed)
    starts = torch.randint(0, stream.numel() - length, (n_windows,), generator=gen)
    ids = windows(stream, starts, length, tok.token_id("[CLS]"), tok.token_id("[SEP]"))
    inputs, labels = mask_tokens(ids, tok, gen, tok.special_ids())
    model.eval()
    losses, top1, top5, count = 0.0, 0, 0, 0
    with torch.inference_mode():
        for i in range(0, n_windows, 32):
            sel = labels[i : i + 32] != -100
            logits = model.mlm_logits(model(inputs[i : i + 32])[sel])
            target = labels[i : i + 32][sel]
            losses += F.cross_entropy(logits, target, reduction="sum").item()
            best = logits.topk(5, dim=-1).indices
            top1 += (best[:, 0] == target).sum().item()
            top5 += (best == target[:, None]).any(-1).sum().item()
            count += int(sel.sum())
    return {"loss": losses / count, "top1": top1 / count, "top5": top5 / count, "n_masked": count}


def unigram_baseline(train_stream: torch.Tensor, held_stream: torch.Tensor, special: set[int]) -> dict[str, float]:
    """Predicting every masked token from training-set unigram frequencies alone."""
    counts = Counter(t for t in train_stream.tolist() if t not in special)
    total = sum(counts.values())
    targets = [t for t in held_stream.tolist() if t not in special]
    top = [t for t, _ in counts.most_common(5)]
    floor = 0.5 / total
    loss = -sum(math.log(counts.get(t, 0) / total or floor) for t in targets) / len(targets)
    return {
        "loss": loss,
        "top1": sum(t == top[0] for t in targets) / len(targets),
        "top5": sum(t in top for t in targets) / len(targets),
    }


def probe_sentences(model: Transformer, tok: Tokenizer, sentences=PROBE_SENTENCES) -> dict:
    """Mask each ordinary word-piece of each sentence in turn: top-1/top-5 hit rates, and examples."""
    mask_id = tok.token_id(tok.mask_token or "[MASK]")
    hits1 = hits5 = total = 0
    examples = []
    model.eval()
    for sentence in sentences:
        enc = tok.encode(sentence)
        positions = [i for i, s in enumerate(enc.special) if not s]
        batch = torch.tensor([enc.ids] * len(positions))
        batch[torch.arange(len(positions)), positions] = mask_id
        with torch.inference_mode():
            hidden = model(batch)[torch.arange(len(positions)), positions]
            best = model.mlm_logits(hidden).topk(5, dim=-1).indices
        for row, pos in enumerate(positions):
            truth = enc.ids[pos]
            hits1 += int(best[row, 0] == truth)
            hits5 += int((best[row] == truth).any())
            total += 1
        examples.append(
            {
                "sentence": sentence,
                "masked": enc.tokens[positions[-2]] if len(positions) > 1 else enc.tokens[positions[0]],
                "top5": [tok.id_to_token(int(i)) for i in best[-2 if len(positions) > 1 else 0]],
            }
        )
    return {"top1": hits1 / total, "top5": hits5 / total, "n": total, "examples": examples}


def whole_words(tok: Tokenizer, words=EVERYDAY_WORDS) -> dict:
    """Share of everyday words that are a single token, and the ones that are split."""
    split = [w for w in words if len(tok.inner.encode(w, add_special_tokens=False).ids) != 1]
    return {"share": 1 - len(split) / len(words), "n": len(words), "split": split}


def head_report(model: Transformer, tok: Tokenizer, docs: list[str], n_docs: int = 200) -> list[dict]:
    """Per-head metrics averaged over held-out documents (up to 128 tokens each)."""
    totals: dict[str, np.ndarray] = {}
    docs = docs[:n_docs]
    for doc in docs:
        enc = tok.encode(doc, max_len=128)
        _, trace = run_with_cache(model, torch.tensor([enc.ids]), kinds=["pattern"])
        m = head_metrics(trace.stack("pattern")[:, 0].numpy(), special=np.array(enc.special))
        for name, values in m.items():
            totals[name] = totals.get(name, 0) + values / len(docs)
    n_layers, n_heads = totals[METRICS[0]].shape
    return [
        {"layer": layer, "head": head, **{name: float(totals[name][layer, head]) for name in METRICS}}
        for layer in range(n_layers)
        for head in range(n_heads)
    ]


def positional_peak(model: Transformer, tok: Tokenizer, docs: list[str]) -> float:
    """Largest mean mass any head puts on the previous or the next token over ``docs``."""
    rows = head_report(model, tok, docs, n_docs=len(docs))
    return max(max(r["previous"], r["next"]) for r in rows)
