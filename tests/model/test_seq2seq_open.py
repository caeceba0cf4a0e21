"""An encoder–decoder opened on the other pages (issue 32): its decoder as one transformer of target ids that reads a
bound source, its cross-attention captured, its encoder alone; both equal to the whole model's own forward pass."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from model.capture import run_with_cache
from model.config import TransformerConfig
from model.devices import copy_buffers
from model.encdec import EncoderDecoder, bound_decoder, encoder_of
from model.learn.tasks import letter_tokenizer
from model.observe import observe
from model.transformer import Transformer

CFG = TransformerConfig(vocab_size=48, d_model=32, n_heads=4, n_layers=2, d_ff=64, max_seq_len=16)


@pytest.fixture(scope="module")
def model() -> EncoderDecoder:
    torch.manual_seed(0)
    return EncoderDecoder(CFG).eval()


def ids(*rows: list[int]) -> torch.Tensor:
    return torch.tensor(rows, dtype=torch.long)


def test_a_bound_decoder_computes_what_the_whole_model_does(model):
    source, target = ids([1, 10, 11, 12, 13, 14]), ids([1, 20, 21, 22, 23])
    decoder = bound_decoder(model, source)
    with torch.no_grad():
        want = model(source, target)  # (1, T, d_model)
        torch.testing.assert_close(decoder(target), want, rtol=0, atol=1e-6)
    _, trace = run_with_cache(decoder, target, kinds=("pattern", "cross_pattern"))
    cross = trace.stack("cross_pattern")[:, 0]  # (L, H, T, S)
    torch.testing.assert_close(cross, model.cross_patterns(source, target)[0], rtol=0, atol=1e-6)
    assert cross.shape == (2, 4, 5, 6) and trace.stack("pattern").shape == (2, 1, 4, 5, 5)
    assert torch.triu(trace.stack("pattern")[0, 0, 0], 1).abs().max() == 0  # causal self-attention


def test_a_batch_of_targets_reads_the_one_bound_source(model):
    source = ids([1, 10, 11, 12])
    decoder = bound_decoder(model, source)
    batch = ids([1, 20, 21], [1, 30, 31])
    with torch.no_grad():
        both = decoder(batch)
        for i in range(2):
            torch.testing.assert_close(both[i], model(source, batch[i : i + 1])[0], rtol=0, atol=1e-6)


def test_the_bound_source_changes_what_the_decoder_writes(model):
    target = ids([1, 20, 21, 22])
    with torch.no_grad():
        a = bound_decoder(model, ids([1, 10, 11]))(target)
        b = bound_decoder(model, ids([1, 11, 10]))(target)
    assert not torch.allclose(a, b)
    assert model.decoder.blocks[0].memory is None  # the run's own decoder is untouched
    with pytest.raises(ValueError, match="one sequence"):
        bound_decoder(model, ids([1, 2], [1, 3]))


def test_the_encoder_opens_alone_and_bidirectional(model):
    source = ids([1, 10, 11, 12, 13])
    encoder = encoder_of(model)
    with torch.no_grad():
        torch.testing.assert_close(encoder(source), model.encoder(source), rtol=0, atol=0)
    _, trace = run_with_cache(encoder, source, kinds=("pattern", "cross_pattern"))
    assert "blocks.0.cross.hook_pattern" not in trace and torch.triu(trace.stack("pattern")[0, 0, 0], 1).sum() > 0


def test_an_observation_of_the_decoder_holds_its_cross_attention(model):
    tok = letter_tokenizer()
    cfg = CFG.replace(vocab_size=tok.vocab_size)
    torch.manual_seed(1)
    whole = EncoderDecoder(cfg).eval()
    source = torch.tensor([tok.encode("07mar1994").ids])  # (1, 10)
    obs = observe(bound_decoder(whole, source), tok, "1994-03-07")
    assert obs.tokens == ["[BOS]", *"1994-03-07"] and obs.causal
    assert obs.patterns.shape == (2, 4, 11, 11) and obs.cross.shape == (2, 4, 11, 10)
    np.testing.assert_allclose(obs.cross.sum(-1), 1, atol=1e-5)
    want = whole.cross_patterns(source, torch.tensor([obs.ids]))[0].numpy()
    np.testing.assert_allclose(obs.cross, want, atol=1e-6)
    assert observe(encoder_of(whole), tok, "07mar1994").cross is None


def test_a_cpu_copy_keeps_the_bound_source(model):
    decoder = bound_decoder(model, ids([1, 10, 11, 12]))
    copy = Transformer(decoder.cfg)
    copy.load_state_dict(decoder.state_dict())
    assert copy.blocks[0].memory is None  # the state dict does not hold it
    copy_buffers(copy, decoder)
    target = ids([1, 20, 21])
    with torch.no_grad():
        torch.testing.assert_close(copy.eval()(target), decoder(target), rtol=0, atol=0)


def test_a_finished_date_run_opens_either_stack_from_the_catalog(tmp_path, monkeypatch):
    from model.io.catalog import ModelSpec, load
    from model.learn.loop import TrainSpec, train
    from model.learn.store import probe_texts, stored_runs, write

    monkeypatch.setenv("ATTENTION_LAB_RUNS", str(tmp_path))
    spec = TrainSpec(task="dates", n_layers=1, n_heads=2, d_model=16, steps=10, snapshot_every=5, batch=4)
    run = train(spec)
    write(run, tmp_path)
    assert stored_runs() == [spec.key]
    source, target = probe_texts(run)
    assert len(source) == 9 and len(target) == 10 and target[4] == target[7] == "-"
    decoder = load(ModelSpec("trained", path=spec.key, stack="decoder"), {})
    assert decoder.info["source_text"] == source and decoder.info["source_tokens"] == ["[BOS]", *source]
    assert decoder.name.endswith("its decoder") and decoder.model.cfg.cross_attention
    other = load(ModelSpec("trained", path=spec.key, stack="decoder", source_text="01jan2000"), {})
    assert other.info["source_tokens"] == ["[BOS]", *"01jan2000"] and "source_note" not in other.info
    long = load(ModelSpec("trained", path=spec.key, stack="decoder", source_text="01jan2000" * 8), {})
    limit = long.model.cfg.max_seq_len
    assert len(long.info["source_tokens"]) == limit
    assert f"cut to the encoder's {limit} tokens" in long.info["source_note"]
    encoder = load(ModelSpec("trained", path=spec.key, stack="encoder"), {})
    assert not encoder.model.cfg.causal and not encoder.model.cfg.cross_attention
    assert encoder.name.endswith("its encoder")
