"""Research instruments: hook functions, the logit lens, direct logit attribution, activation patching and QK/OV
circuits, checked against known answers (the TransformerLens cross-check is tests/model/test_transformer_lens.py)."""

from __future__ import annotations

import threading

import numpy as np
import pytest
import torch

from model.analysis.circuits import circuit, head_matrices
from model.analysis.lens import OUTPUT, direct_logit_attribution, logit_lens
from model.analysis.patching import PATCH_KINDS, Metric, activation_patching, cache_run, patch_sweep, run_from, score
from model.capture import capture, hook_points, leftover_hooks, run_with_cache
from model.config import TransformerConfig
from model.intervene import Hook, hooks, run_with_hooks
from model.transformer import Transformer

DECODERS = {
    "llama": dict(norm_kind="rmsnorm", activation="swiglu", n_kv_heads=2, positional="rope"),
    "gpt2": dict(positional="learned", bias=True, ff_bias=True, activation="gelu_tanh"),
    "neox": dict(parallel_residual=True, positional="rope"),
    "untied": dict(norm_kind="rmsnorm", tie_lm_head=False),
    # Granite's multipliers: what a sublayer adds and every logit are scaled
    "granite": dict(
        norm_kind="rmsnorm", positional="rope", residual_multiplier=0.3, embed_multiplier=5.0, logit_divisor=4.0
    ),
    "nope": dict(norm_kind="rmsnorm", positional="rope", nope_layers=(1,)),
}


def decoder(name: str = "llama", layers: int = 3, dtype=torch.float64) -> Transformer:
    torch.manual_seed(0)
    cfg = TransformerConfig(
        vocab_size=50, d_model=32, n_heads=4, n_layers=layers, d_ff=64, causal=True, lm_head=True, **DECODERS[name]
    )
    return Transformer(cfg).to(dtype).eval()


IDS = [1, 5, 7, 9, 3, 4, 11]


def test_the_feed_forward_and_the_final_norm_have_hook_points(tiny_model, ids):
    names = hook_points(tiny_model)
    assert {"blocks.0.hook_mlp_in", "blocks.0.ff.hook_hidden", "blocks.1.hook_mlp_out", "hook_final"} <= set(names)
    with capture(tiny_model, kinds=["mlp_in", "mlp_hidden", "mlp_out"]) as trace:
        out = tiny_model(ids)
    assert trace.get("mlp_hidden", 1).shape == (2, 10, 64)  # d_ff
    ff = tiny_model.blocks[1].ff
    assert torch.allclose(ff(trace.get("mlp_in", 1)), trace.get("mlp_out", 1), atol=1e-6)
    kept = {}
    run_with_hooks(tiny_model, ids, [("hook_final", lambda x, hook: kept.setdefault("x", x))])
    assert torch.equal(kept["x"], out)


def test_a_hook_function_can_replace_an_activation_and_is_gone_afterwards():
    model = decoder()
    plain = run_with_hooks(model, IDS, return_type="logits")

    def zero_head(z: torch.Tensor, hook: Hook) -> torch.Tensor:
        assert hook.layer == 1 and z.shape == (1, 4, 7, 8)
        z = z.clone()
        z[:, 2] = 0.0
        return z

    edited = run_with_hooks(model, IDS, [("blocks.1.attn.hook_z", zero_head)], return_type="logits")
    assert not torch.allclose(plain, edited)
    with capture(model, kinds=[], ablate=[(1, 2)]):
        expected = model.lm_logits(model(torch.tensor([IDS])))
    assert torch.allclose(edited, expected)  # the same as the capture's own ablation
    seen = []
    run_with_hooks(model, IDS, [(lambda n: n.endswith("hook_pattern"), lambda x, h: seen.append(h.name))])
    assert seen == [f"blocks.{i}.attn.hook_pattern" for i in range(3)]
    assert leftover_hooks(model) == 0


def test_hooks_are_removed_when_one_raises_and_bad_hooks_say_why():
    model = decoder()

    def boom(x, hook):
        raise RuntimeError("boom")

    with pytest.raises(RuntimeError, match="boom"):
        run_with_hooks(model, IDS, [("blocks.0.hook_resid_pre", boom)])
    assert leftover_hooks(model) == 0
    with pytest.raises(ValueError, match=r"did you mean blocks\.0\.hook_resid_pre"):
        run_with_hooks(model, IDS, [("blocks.0.hook_resid_pr", boom)])
    with pytest.raises(ValueError, match="must keep"):
        run_with_hooks(model, IDS, [("blocks.0.hook_resid_pre", lambda x, h: x[:, :2])])
    assert leftover_hooks(model) == 0


def test_a_hook_acts_only_on_the_thread_that_attached_it():
    model = decoder()
    plain = run_with_hooks(model, IDS)
    other = {}
    with hooks(model, [("blocks.0.hook_resid_pre", lambda x, h: torch.zeros_like(x))]):
        thread = threading.Thread(target=lambda: other.setdefault("h", run_with_hooks(model, IDS)))
        thread.start()
        thread.join()
    assert torch.equal(other["h"], plain)


def test_what_run_with_cache_returns_goes_on_into_the_head():
    """The capture API's example: lm_logits on run_with_cache's output (inference tensors could not)."""
    model = decoder(dtype=torch.float32)
    hidden, trace = run_with_cache(model, torch.tensor([IDS]), kinds=["resid_post"])
    assert model.lm_logits(hidden).shape == (1, 7, 50)
    assert model.lm_logits(trace.get("resid_post", 2)).shape == (1, 7, 50)


@pytest.mark.parametrize("name", list(DECODERS))
def test_the_logit_lens_of_the_last_layer_is_the_models_output(name):
    model = decoder(name)
    logits = run_with_hooks(model, IDS, return_type="logits")[0]  # (N, V)
    lens = logit_lens(model, IDS, target=9, k=5)
    assert lens.top_ids.shape == (4, 7, 5) and lens.labels[0] == "embeddings"
    probs = logits.softmax(-1)
    assert np.array_equal(lens.top_ids[-1], probs.topk(5).indices.numpy())
    assert np.allclose(lens.top_probs[-1], probs.topk(5).values.numpy(), atol=1e-6)
    ranks = (logits > logits[:, 9:10]).sum(-1) + 1
    assert np.array_equal(lens.target_rank[-1], ranks.numpy())


def test_the_logit_lens_follows_each_positions_own_output_in_the_same_pass():
    """target=OUTPUT: at each position the token the model outputs there, followed down the layers (the Causes
    page's default, one forward pass instead of two)."""
    model = decoder()
    lens = logit_lens(model, IDS, target=OUTPUT)
    assert (lens.target_rank[-1] == 1).all()  # the output's own top token ranks first in the last row
    for col in (0, 3, 6):
        token = int(lens.top_ids[-1, col, 0])
        alone = logit_lens(model, IDS, positions=[col], target=token)
        assert np.array_equal(lens.target_rank[:, col], alone.target_rank[:, 0])
        assert np.allclose(lens.target_prob[:, col], alone.target_prob[:, 0])


def test_the_logit_lens_reads_a_post_norm_masked_language_model():
    torch.manual_seed(0)
    cfg = TransformerConfig(vocab_size=40, d_model=32, n_heads=4, n_layers=2, d_ff=64, norm="post", mlm_head=True)
    model = Transformer(cfg).eval()
    lens = logit_lens(model, IDS, positions=[2, -1])
    with torch.no_grad():
        own = model.mlm_logits(model(torch.tensor([IDS])))[0].softmax(-1)
    assert list(lens.positions) == [2, 6]
    assert np.array_equal(lens.top_ids[-1], own[[2, 6]].topk(5).indices.numpy())


@pytest.mark.parametrize("name", list(DECODERS))
def test_direct_logit_attribution_sums_to_the_logit(name):
    model = decoder(name)
    logits = run_with_hooks(model, IDS, return_type="logits")[0, -1]
    dla = direct_logit_attribution(model, IDS, target=9, foil=3)
    assert dla.heads.shape == (3, 4) and dla.mlps.shape == (3,)
    assert dla.logit == pytest.approx(float(logits[9] - logits[3]), abs=1e-9)
    assert dla.total == pytest.approx(dla.logit, abs=1e-9)
    single = direct_logit_attribution(model, IDS, target=9, position=3)
    assert single.total == pytest.approx(float(run_with_hooks(model, IDS, return_type="logits")[0, 3, 9]), abs=1e-9)


def test_direct_logit_attribution_in_float32_sums_to_the_logit_to_float_precision():
    model = decoder("llama", dtype=torch.float32)
    dla = direct_logit_attribution(model, IDS, target=9)
    assert dla.total == pytest.approx(dla.logit, abs=1e-4)


def test_direct_logit_attribution_refuses_models_it_does_not_apply_to():
    torch.manual_seed(0)
    mlm = Transformer(TransformerConfig(vocab_size=40, d_model=32, n_heads=4, n_layers=1, mlm_head=True)).eval()
    with pytest.raises(ValueError, match="linear unembedding"):
        direct_logit_attribution(mlm, IDS, 3)
    post = TransformerConfig(vocab_size=40, d_model=32, n_heads=4, n_layers=1, lm_head=True, causal=True, norm="post")
    with pytest.raises(ValueError, match="pre-norm"):
        direct_logit_attribution(Transformer(post).eval(), IDS, 3)


CLEAN, CORRUPTED = [1, 5, 7, 9, 3, 4, 11], [1, 5, 8, 9, 3, 4, 11]  # one token differs, at position 2


def test_running_from_a_layer_equals_the_whole_forward_pass():
    model = decoder("gpt2")
    metric = Metric(9, 3)
    cache = cache_run(model, CLEAN)
    for layer in range(3):
        start = cache[f"blocks.{layer}.hook_resid_pre"]
        assert float(run_from(model, start, layer, metric, None, "hook_final")) == pytest.approx(
            score(model, CLEAN, metric), abs=1e-9
        )


@pytest.mark.parametrize("name", ["llama", "gpt2"])
def test_patching_a_run_into_itself_recovers_one_from_clean_and_zero_from_corrupted(name):
    model = decoder(name)
    metric = Metric(9, 3)
    result = activation_patching(model, CLEAN, CORRUPTED, metric)
    clean, corrupted = cache_run(model, CLEAN), cache_run(model, CORRUPTED)
    into_clean = patch_sweep(model, clean, clean, metric)
    into_corrupted = patch_sweep(model, corrupted, corrupted, metric)
    for kind in PATCH_KINDS:
        assert np.allclose((into_clean[kind] - result.corrupted) / (result.clean - result.corrupted), 1.0)
        assert np.allclose((into_corrupted[kind] - result.corrupted) / (result.clean - result.corrupted), 0.0)
    resid = result.recovered("resid_pre")  # (L, N)
    assert resid.shape == (3, 7) and result.recovered("z").shape == (3, 4)
    assert resid[0, 2] == pytest.approx(1.0)  # the one changed token, before any layer mixed it: all of it
    assert np.allclose(resid[:, :2], 0.0)  # causal: positions before the change hold nothing of it


def test_patching_needs_prompts_of_one_length_and_scores_a_probability():
    model = decoder()
    with pytest.raises(ValueError, match="same length"):
        activation_patching(model, CLEAN, CLEAN[:-1], Metric(9))
    prob = activation_patching(model, CLEAN, CORRUPTED, Metric(9), kinds=["z"])
    logits = run_with_hooks(model, CLEAN, return_type="logits")[0, -1]
    assert prob.clean == pytest.approx(float(logits.softmax(-1)[9]))
    assert set(prob.raw) == {"z"}


def test_a_head_that_copies_scores_one_and_its_singular_values_are_its_products():
    torch.manual_seed(0)
    cfg = TransformerConfig(vocab_size=30, d_model=8, n_heads=1, n_layers=1, d_ff=16, lm_head=True, causal=True)
    model = Transformer(cfg).double().eval()
    attn = model.blocks[0].attn
    with torch.no_grad():
        attn.w_v.weight.copy_(torch.eye(8))
        attn.w_o.weight.copy_(torch.eye(8))  # E W_V W_O Eᵀ = E Eᵀ: every eigenvalue ≥ 0
    card = circuit(model, 0, 0, IDS)
    assert card.copying == pytest.approx(1.0)
    assert all(src == out for src, out, _ in card.ov_pairs)  # each token raises itself most
    assert card.self_in_top5 == (len(set(IDS)), len(set(IDS)))
    with torch.no_grad():
        attn.w_o.weight.copy_(-torch.eye(8))
    assert circuit(model, 0, 0, IDS).copying == pytest.approx(-1.0)  # an anti-copying (suppression) head
    gqa = decoder("llama")
    m = head_matrices(gqa, 1, 3)
    card = circuit(gqa, 1, 3, IDS)
    assert card.kv_head == 1  # 4 query heads over 2 K/V heads
    full = np.linalg.svd((m["q"] @ m["k"].t()).numpy(), compute_uv=False)[:8]
    assert np.allclose(card.qk_singular, full)
    assert np.allclose(card.ov_singular, np.linalg.svd((m["v"] @ m["o"]).numpy(), compute_uv=False)[:8])


@pytest.mark.parametrize(
    "folder", ["../hf_encdec/t5", "../hf_encdec/t5_v1_1", "../hf_encdec/mbart", "gpt_oss", "mixtral"]
)
def test_direct_logit_attribution_sums_to_the_models_logit_on_every_family(folder):
    """An encoder–decoder's decoder: its cross-attention heads are parts (the T5 fixture's parts missed its logit by
    0.07 without them), and BART's final_logits_bias is part of the logit (mBART's: 1.4)."""
    from model.io.catalog import ModelSpec, load
    from tests.hf_fixtures import FIXTURES

    loaded = load(ModelSpec("folder", path=str(FIXTURES / folder)))
    model = loaded.model
    ids = list(loaded.tokenizer.encode("the cat sat on the mat because it was tired").ids)
    logits = run_with_hooks(model, ids, return_type="logits")[0].double()  # (N, V)
    for position, foil in ((-1, None), (3, ids[1])):
        dla = direct_logit_attribution(model, ids, target=ids[2], foil=foil, position=position)
        want = logits[position, ids[2]] - (logits[position, foil] if foil is not None else 0.0)
        assert dla.logit == pytest.approx(float(want), abs=1e-4)
        assert dla.total == pytest.approx(dla.logit, abs=1e-4)
        assert (dla.cross_heads is not None) == model.cfg.cross_attention
        if dla.cross_heads is not None:
            assert dla.cross_heads.shape == dla.heads.shape and np.abs(dla.cross_heads).max() > 1e-4


@pytest.mark.parametrize("folder", ["bert_mlm_untied", "xlm-roberta_mlm_untied", "bert_mlm", "gpt2_untied"])
def test_the_circuits_read_the_vocabulary_through_the_heads_own_matrix(folder):
    """An untied MLM head has its own vocabulary matrix: the OV table reads it (before: the input embeddings)."""
    from model.analysis.circuits import unembedding
    from model.io.catalog import ModelSpec, load
    from tests.hf_fixtures import FIXTURES

    model = load(ModelSpec("folder", path=str(FIXTURES.parent / "hf_heads" / folder))).model
    own = model.lm_head if model.lm_head is not None else model.mlm.decoder if model.mlm.decoder is not None else None
    matrix = (own if own is not None else model.tok_emb).weight.detach().double()  # (V, d_model)
    gamma = model.ln_f.weight.detach().double() if model.ln_f is not None else torch.ones(matrix.size(1))
    torch.testing.assert_close(unembedding(model), gamma[:, None] * matrix.t() / model.cfg.logit_divisor)
    assert (own is not None) == ("untied" in folder)


@pytest.mark.parametrize("folder", ["albert", "electra", "../hf_heads/albert_mlm"])
def test_a_head_of_narrow_embeddings_says_why_it_has_no_circuit_card(folder):
    """ALBERT's and ELECTRA's vocabulary is narrower than their stream: the card said nothing and raised a
    RuntimeError from a matrix product; now the reason, and the page says it."""
    from model.analysis.circuits import circuit_problem
    from model.io.catalog import ModelSpec
    from tests.hf_fixtures import FIXTURES
    from viz.figures import Theme
    from viz.views import ViewUnavailableError, build
    from viz.views.source import DirectSource

    src = DirectSource.for_text(ModelSpec("folder", path=str(FIXTURES / folder)), "the cat sat on the mat")
    assert "16 wide and its stream 32" in circuit_problem(src.loaded.model)
    with pytest.raises(ViewUnavailableError, match="no linear path joins a head's output to a token"):
        build("causes.circuit", src, Theme(), layer=1, head=0)
    assert (
        circuit_problem(DirectSource.for_text(ModelSpec("folder", path=str(FIXTURES / "bert")), "a").loaded.model)
        is None
    )


def test_the_value_bias_part_of_a_head_with_a_learned_sink_is_scaled_by_the_rows_weight_on_tokens():
    """With W_V zero every value is b_V, so all a head writes is its value-bias part: (1 − the sink's share) of b_V
    through W_O. The part was b_V's whole (a row summing to 1), overstated by 1 / (1 − share) on gpt-oss."""
    torch.manual_seed(0)
    cfg = TransformerConfig(
        vocab_size=50, d_model=32, n_heads=4, n_layers=2, d_ff=64, causal=True, lm_head=True, attn_sinks=True,
        bias=True, norm_kind="rmsnorm", positional="rope",
    )  # fmt: skip
    model = Transformer(cfg).double().eval()
    with torch.no_grad():
        for block in model.blocks:
            block.attn.w_v.weight.zero_()
            block.attn.w_v.bias.normal_(0.0, 1.0)
            block.attn.sinks.normal_(0.0, 2.0)
    dla = direct_logit_attribution(model, IDS, target=9, foil=3)
    np.testing.assert_allclose(dla.heads, dla.value_biases, rtol=1e-9, atol=1e-12)
    assert np.abs(dla.value_biases).max() > 1e-3
