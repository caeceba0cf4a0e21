"""The residual stream's norms and the block's anatomy, against the model's own hook points and its config."""

from __future__ import annotations

import threading

import numpy as np
import pytest
import torch

from model.analysis.stream import embedding_parts, residual_stream
from model.anatomy import anatomy
from model.capture import leftover_hooks, run_with_cache
from model.config import TransformerConfig
from model.transformer import Transformer

KINDS = ["resid_pre", "resid_mid", "resid_post", "attn_out", "mlp_out"]
VARIANTS = {
    "pre": {},
    "post": {"norm": "post", "embedding_layer_norm": True},
    "parallel": {"parallel_residual": True},
    "sandwich": {"sandwich_norm": True, "norm_kind": "rmsnorm"},
    "decoder": {"causal": True, "lm_head": True, "positional": "rope", "n_kv_heads": 2, "norm_kind": "rmsnorm"},
}


def build(**changes) -> Transformer:
    torch.manual_seed(0)
    cfg = TransformerConfig(vocab_size=64, d_model=32, n_heads=4, n_layers=3, d_ff=64, max_seq_len=32, dropout=0.0)
    return Transformer(cfg.replace(**changes)).eval()


def norms(t: torch.Tensor) -> np.ndarray:
    return t[0].double().norm(dim=-1).numpy()


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_stream_norms_equal_the_captured_stream(variant):
    model = build(**VARIANTS[variant])
    ids = list(range(3, 13))
    s = residual_stream(model, ids)
    hidden, trace = run_with_cache(model, torch.tensor([ids]), kinds=KINDS)
    L = model.cfg.n_layers
    assert s.norm.shape == (2 * L + 1, 10) and s.added.shape == s.read.shape == (2 * L, 10)
    assert s.labels[0] == "embedding" and s.labels[1] == "L0 attention" and s.labels[-1] == f"L{L - 1} feed-forward"
    np.testing.assert_allclose(s.norm[0], norms(trace.get("resid_pre", 0)), rtol=1e-5)
    for layer in range(L):
        pre, mid, post = (trace.get(k, layer) for k in ("resid_pre", "resid_mid", "resid_post"))
        np.testing.assert_allclose(s.norm[2 * layer + 1], norms(mid), rtol=1e-5)
        np.testing.assert_allclose(s.norm[2 * layer + 2], norms(post), rtol=1e-5)
        np.testing.assert_allclose(s.read[2 * layer], norms(pre), rtol=1e-5)
        if variant == "post":  # the sublayer's own output, added before the norm
            np.testing.assert_allclose(s.added[2 * layer], norms(trace.get("attn_out", layer)), rtol=1e-5)
            np.testing.assert_allclose(s.added[2 * layer + 1], norms(trace.get("mlp_out", layer)), rtol=1e-5)
        else:  # exactly what joined the stream
            np.testing.assert_allclose(s.added[2 * layer], norms(mid - pre), rtol=1e-4)
            np.testing.assert_allclose(s.added[2 * layer + 1], norms(post - mid), rtol=1e-4)
    assert s.post_norm == (variant == "post")
    assert (s.final is not None) == model.cfg.use_final_layer_norm
    if s.final is not None:
        np.testing.assert_allclose(s.final, norms(hidden), rtol=1e-5)
    np.testing.assert_allclose(s.ratio, s.added / s.read)
    assert leftover_hooks(model) == 0


def test_mlp_out_is_the_feed_forward_output():
    model = build()
    ids = torch.tensor([list(range(3, 11))])
    _, trace = run_with_cache(model, ids, kinds=["resid_mid", "mlp_out"])
    block = model.blocks[1]
    with torch.no_grad():
        expected = block.ff(block.ln2(trace.get("resid_mid", 1)))
    torch.testing.assert_close(trace.get("mlp_out", 1), expected)


def test_pre_norm_stream_grows_and_post_norm_is_reset():
    """A post-norm LayerNorm with unit weights puts every row at norm √d exactly."""
    post = residual_stream(build(norm="post"), list(range(3, 13)))
    np.testing.assert_allclose(post.norm[1:], np.sqrt(32), rtol=1e-3)
    pre = residual_stream(build(), list(range(3, 13)))
    assert pre.norm[-1].mean() > pre.norm[0].mean()


def test_no_hook_is_left_when_the_pass_raises_and_other_threads_are_not_measured():
    model = build()
    with pytest.raises(IndexError):
        residual_stream(model, [3, 4, 999])  # outside the vocabulary: the embedding raises
    assert leftover_hooks(model) == 0
    ready, done = threading.Event(), threading.Event()

    def other():
        ready.set()
        while not done.is_set():
            with torch.inference_mode():
                model(torch.tensor([[5, 6]]))

    thread = threading.Thread(target=other)
    thread.start()
    ready.wait()
    try:
        s = residual_stream(model, list(range(3, 13)))  # another thread's 2-token passes never land here
    finally:
        done.set()
        thread.join()
    assert s.norm.shape[1] == 10


def test_embedding_parts_add_up_to_the_models_embedding():
    model = build()
    ids = list(range(3, 9))
    parts = embedding_parts(model, ids)
    _, trace = run_with_cache(model, torch.tensor([ids]), kinds=["resid_pre"], layers=[0])
    np.testing.assert_allclose(parts["sum"], trace.get("resid_pre", 0)[0].numpy(), rtol=1e-6)
    np.testing.assert_allclose(parts["token"] + parts["position"], parts["sum"], rtol=1e-5, atol=1e-6)
    assert embedding_parts(build(positional="rope"), ids)["position"] is None


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_anatomy_follows_the_config(variant):
    cfg = build(**VARIANTS[variant]).cfg
    a = anatomy(cfg)
    keys = [p.key for p in a.parts]
    assert len(keys) == len(set(keys))
    assert all(x in keys and y in keys for x, y in a.edges)
    assert len({(p.lane, p.row) for p in a.parts}) == len(a.parts)  # no two boxes on one spot
    norms_ = [p for p in a.parts if p.kind == "norm" and p.in_block]
    if variant == "post":  # the norm sits on the stream
        assert norms_ and all(p.lane == 0 for p in norms_)
        assert "Post-norm" in a.summary
    else:  # on the branches
        assert norms_ and all(p.lane > 0 for p in norms_)
    adds = [p for p in a.parts if p.kind == "add"]
    assert len(adds) == (1 if variant == "parallel" else 2)
    assert sum(p.key.endswith("_post") for p in a.parts) == (2 if variant == "sandwich" else 0)
    assert ("final_norm" in keys) == cfg.use_final_layer_norm
    attn = a.part("attn").detail
    if variant == "decoder":
        assert "GQA" in attn and "RoPE" in attn and "causal" in attn and a.part("head").label == "next-token logits"
        assert "RMSNorm" in a.part("ln1").label
    lo, hi = a.block_rows
    assert all(lo <= p.row <= hi for p in a.parts if p.in_block)


@pytest.mark.parametrize("folder", ["t5", "mbart", "bart"])
def test_a_decoder_that_reads_a_source_has_its_cross_attention_as_a_sublayer_of_its_own(folder):
    """T5 and mBART (pre-norm), BART (post-norm): attention, cross-attention, feed-forward in each block. Before,
    what cross-attention added was counted as the feed-forward's (pre-norm) or left out (post-norm)."""
    from model.capture import capture
    from model.io.catalog import ModelSpec, load
    from tests.hf_fixtures import FIXTURES

    model = load(ModelSpec("folder", path=str(FIXTURES.parent / "hf_encdec" / folder))).model
    ids = list(range(3, 13))
    s = residual_stream(model, ids)
    L = model.cfg.n_layers
    assert s.parts == ("attention", "cross-attention", "feed-forward") and s.n_layers == L
    assert s.labels[1:4] == ("L0 attention", "L0 cross-attention", "L0 feed-forward") and len(s.labels) == 3 * L + 1
    kept = {}
    with torch.inference_mode(), capture(model, kinds=["resid_mid", "resid_post", "mlp_out"]) as trace:
        names = [f"blocks.{i}.{h}" for i in range(L) for h in ("hook_resid_mid_cross", "cross.hook_out")]
        handles = [
            model.get_submodule(n).register_forward_hook(lambda _m, _i, out, n=n: kept.__setitem__(n, out))
            for n in names
        ]
        try:
            model(torch.tensor([ids]))
        finally:
            for h in handles:
                h.remove()
        for i in range(L):
            np.testing.assert_allclose(s.norm[3 * i + 1], norms(trace.get("resid_mid", i)), rtol=1e-5)
            np.testing.assert_allclose(s.norm[3 * i + 2], norms(kept[f"blocks.{i}.hook_resid_mid_cross"]), rtol=1e-5)
            np.testing.assert_allclose(s.norm[3 * i + 3], norms(trace.get("resid_post", i)), rtol=1e-5)
            # what each sublayer adds is its own output (every residual multiplier here is 1)
            np.testing.assert_allclose(s.added[3 * i + 1], norms(kept[f"blocks.{i}.cross.hook_out"]), rtol=1e-4)
            np.testing.assert_allclose(s.added[3 * i + 2], norms(trace.get("mlp_out", i)), rtol=1e-4)


def test_decompose_resid_gives_a_decoders_cross_attention_its_own_part():
    """The parts of a T5 decoder's stream: embeddings, then attention, cross-attention and feed-forward per layer,
    summing to the final stream; the feed-forward's part is its own output (before, it held the cross-attention's)."""
    from model.analysis.resid import RESID_KINDS, decompose_resid
    from model.io.catalog import ModelSpec, load
    from tests.hf_fixtures import FIXTURES

    model = load(ModelSpec("folder", path=str(FIXTURES.parent / "hf_encdec" / "t5"))).model
    _, trace = run_with_cache(model, torch.tensor([list(range(3, 13))]), kinds=[*RESID_KINDS, "mlp_out"])
    parts, labels = decompose_resid(model, trace)
    L = model.cfg.n_layers
    assert labels[:4] == ["embed", "0_attn_out", "0_cross_attn_out", "0_mlp_out"] and len(labels) == 1 + 3 * L
    torch.testing.assert_close(parts.sum(0), trace.get("resid_post", L - 1), atol=1e-5, rtol=1e-5)
    for i in range(L):
        torch.testing.assert_close(parts[3 + 3 * i], trace.get("mlp_out", i), atol=1e-5, rtol=1e-5)
