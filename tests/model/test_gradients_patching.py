"""Backward hooks, batched activation patching and attribution patching (model/intervene.py,
model/analysis/patching.py, model/analysis/attribution.py)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from model.analysis.attribution import attribution_patching, estimate, grad_cache
from model.analysis.composition import composition_scores, composition_with, factors
from model.analysis.patching import PATCH_KINDS, Metric, activation_patching, cache_run, patch_sweep
from model.analysis.paths import path_patching
from model.analysis.resid import RESID_KINDS, accumulated_resid, decompose_resid, stack_head_results
from model.capture import hook_name, leftover_hooks, run_with_cache
from model.intervene import hooks, run_with_hooks
from tests.model.test_research import CLEAN, CORRUPTED, decoder


def test_a_backward_hook_sees_the_gradient_autograd_computes_and_no_parameter_grad_changes():
    model = decoder("untied")
    seen = {}

    def keep(grad, hook):
        seen[hook.name] = grad.clone()

    logits = run_with_hooks(
        model, CLEAN, bwd_hooks=[("hook_final", keep)], loss=lambda out: out[0, -1, 9], return_type="logits"
    )
    g = seen["hook_final"][0]  # (N, d_model)
    assert torch.allclose(g[-1], model.lm_head.weight[9].detach())  # d logit / d h = the unembedding's row
    assert torch.count_nonzero(g[:-1]) == 0  # only the last position reads out
    assert not logits.requires_grad
    assert all(p.grad is None for p in model.parameters())
    assert leftover_hooks(model) == 0


def test_a_backward_hook_that_returns_a_gradient_replaces_it_upstream():
    model = decoder("llama")
    seen = {}

    def zero(grad, hook):
        return torch.zeros_like(grad)

    def keep(grad, hook):
        seen[hook.name] = grad

    last = hook_name("resid_post", 2)
    bwd = [(last, zero), ("blocks.0.hook_resid_pre", keep)]
    run_with_hooks(model, CLEAN, bwd_hooks=bwd, loss=lambda out: out[0, -1].sum())
    assert torch.count_nonzero(seen["blocks.0.hook_resid_pre"]) == 0  # everything flows through the last block
    run_with_hooks(model, CLEAN, bwd_hooks=bwd[1:], loss=lambda out: out[0, -1].sum())
    assert torch.count_nonzero(seen["blocks.0.hook_resid_pre"]) > 0
    with pytest.raises(ValueError, match="need a loss"):
        run_with_hooks(model, CLEAN, bwd_hooks=bwd[1:])
    with pytest.raises(ValueError, match="must keep"):
        run_with_hooks(model, CLEAN, bwd_hooks=[(last, lambda g, h: g[:, :1])], loss=lambda out: out.sum())
    assert leftover_hooks(model) == 0


def test_in_a_with_block_the_watched_activations_are_what_autograd_differentiates():
    model = decoder("gpt2")
    seen = {}
    with (
        torch.enable_grad(),
        hooks(model, bwd_hooks=[("blocks.1.attn.hook_z", lambda g, h: seen.update(z=g))]) as taken,
    ):
        out = model(torch.tensor([CLEAN]))
        (grad,) = torch.autograd.grad(out[0, -1, 0], taken)
    assert grad.shape == (1, 4, 7, 8) and torch.equal(grad, seen["z"])


PAIRS = ([CLEAN, [1, 6, 7, 9, 3, 4, 11]], [CORRUPTED, [1, 6, 8, 9, 3, 4, 12]])


@pytest.mark.parametrize("foil", [True, False])
def test_a_batch_of_pairs_is_the_average_of_its_pairs_each_with_its_own_answer(foil):
    model = decoder("llama")
    answers, foils = (9, 20), (3, 21)
    metric = Metric(answers, foils if foil else None)
    batch = activation_patching(model, PAIRS[0], PAIRS[1], metric)
    alone = [
        activation_patching(model, c, k, Metric(a, f if foil else None))
        for c, k, a, f in zip(*PAIRS, answers, foils, strict=True)
    ]
    assert batch.clean == pytest.approx(np.mean([r.clean for r in alone]), abs=1e-9)
    assert batch.corrupted == pytest.approx(np.mean([r.corrupted for r in alone]), abs=1e-9)
    for kind in PATCH_KINDS:
        assert np.allclose(batch.raw[kind], np.mean([r.raw[kind] for r in alone], axis=0), atol=1e-9)
    with pytest.raises(ValueError, match="one per prompt"):
        activation_patching(model, CLEAN, CORRUPTED, metric, kinds=["z"])
    with pytest.raises(ValueError, match="same number of tokens"):
        activation_patching(model, [CLEAN, CLEAN[:-1]], PAIRS[1], metric)


@pytest.mark.parametrize("name", ["llama", "gpt2"])
def test_attribution_patching_is_activation_patching_to_first_order(name):
    """Donors a small step ε from the receiving run: the estimate's error shrinks like ε², the effect like ε."""
    model = decoder(name)
    metric = Metric((9, 20), (3, 21))
    names = [hook_name(k, i) for k in (*PATCH_KINDS, "resid_pre") for i in range(3)]
    value, receiver, grads = grad_cache(model, PAIRS[1], metric, names)
    torch.manual_seed(1)
    direction = {n: torch.randn_like(a) for n, a in receiver.items()}
    errors = []
    for eps in (1e-2, 1e-3):
        donor = {n: a + eps * direction[n] for n, a in receiver.items()}
        real = patch_sweep(model, cache_run(model, PAIRS[1]), donor, metric)
        guess = estimate(donor, receiver, grads, value, PATCH_KINDS, 3)
        effect = max(np.abs(real[k] - value).max() for k in PATCH_KINDS)
        errors.append(max(np.abs(real[k] - guess[k]).max() for k in PATCH_KINDS) / effect)
    assert errors[0] < 0.05 and errors[1] < errors[0] / 5  # first order: relative error ∝ ε


def test_attribution_patching_ends_where_activation_patching_does_and_ranks_its_cells():
    model = decoder("gpt2")
    metric = Metric(9, 3)
    real = activation_patching(model, CLEAN, CORRUPTED, metric)
    guess = attribution_patching(model, CLEAN, CORRUPTED, metric)
    assert guess.clean == pytest.approx(real.clean) and guess.corrupted == pytest.approx(real.corrupted)
    assert set(guess.raw) == set(PATCH_KINDS) and guess.raw["z"].shape == (3, 4)
    # the residual stream before the changed token holds nothing of it: both say exactly 0 there
    assert np.allclose(guess.recovered("resid_pre")[:, :2], 0.0)
    a, b = real.recovered("z").ravel(), guess.recovered("z").ravel()
    assert np.corrcoef(a, b)[0, 1] > 0.5
    assert all(p.grad is None for p in model.parameters()) and leftover_hooks(model) == 0


def _path_reference(model, clean, corrupted, metric, sender, receivers):
    """Path patching for one sender, written out plainly: one unbatched run per step, every hook spelled out."""
    donor, frozen = cache_run(model, clean, ("z",)), cache_run(model, corrupted, ("z",))
    layer, head = sender

    def freeze(x, hook):
        out = frozen[hook.name].clone()
        if hook.layer == layer:
            out[:, head] = donor[hook.name][:, head]
        return out

    z_hooks = [(hook_name("z", i), freeze) for i in range(3)]
    if receivers == "logits":
        logits = run_with_hooks(model, corrupted, z_hooks, return_type="logits")
        return float(metric(logits[:, -1]))
    taken = {}
    names = {hook_name(w, lay) for lay, _, w in receivers}
    keep = [(n, lambda x, hook: taken.__setitem__(hook.name, x.clone())) for n in names]
    run_with_hooks(model, corrupted, [*z_hooks, *keep])

    def receive(x, hook):
        x = x.clone()
        for lay, h, w in receivers:
            if hook_name(w, lay) == hook.name:
                slot = h if w == "q" else h // model.blocks[lay].attn.group
                x[:, slot] = taken[hook.name][:, slot]
        return x

    logits = run_with_hooks(model, corrupted, [(n, receive) for n in names], return_type="logits")
    return float(metric(logits[:, -1]))


@pytest.mark.parametrize("name", ["llama", "gpt2"])
@pytest.mark.parametrize("receivers", ["logits", [(2, 1, "q"), (2, 3, "k")], [(1, 0, "v")], [(1, 0, "v"), (2, 1, "q")]])
def test_path_patching_matches_the_steps_written_out_for_every_sender(name, receivers):
    model = decoder(name)
    metric = Metric(9, 3)
    result = path_patching(model, CLEAN, CORRUPTED, metric, receivers)
    raw = result.raw["z"]
    first = 3 if receivers == "logits" else min(lay for lay, _, _ in receivers)
    assert np.isnan(raw[first:]).all() and not np.isnan(raw[:first]).any()
    for layer in range(first):
        for head in range(4):
            ref = _path_reference(model, CLEAN, CORRUPTED, metric, (layer, head), receivers)
            assert raw[layer, head] == pytest.approx(ref, abs=1e-9)
    assert leftover_hooks(model) == 0


def test_path_patching_from_the_last_layer_to_the_logits_is_activation_patching():
    """No head after the last layer to freeze: its path to the logits is all of its effect."""
    model = decoder("llama")
    metric = Metric((9, 20), (3, 21))
    paths = path_patching(model, PAIRS[0], PAIRS[1], metric, "logits")
    real = activation_patching(model, PAIRS[0], PAIRS[1], metric, kinds=["z"])
    assert np.allclose(paths.recovered("z")[-1], real.recovered("z")[-1], atol=1e-9)
    assert not np.allclose(paths.recovered("z")[0], real.recovered("z")[0], atol=1e-3)  # frozen heads matter
    with pytest.raises(ValueError, match="not a head"):
        path_patching(model, CLEAN, CORRUPTED, Metric(9, 3), [(5, 0, "q")])
    with pytest.raises(ValueError, match="reads its"):
        path_patching(model, CLEAN, CORRUPTED, Metric(9, 3), [(1, 0, "o")])


@pytest.mark.parametrize("name", ["llama", "gpt2"])
def test_composition_scores_are_the_frobenius_ratio_of_the_full_products(name):
    """The k × k route equals ‖W_OV¹ M²‖ / (‖W_OV¹‖ ‖M²‖) on the d × d products (GQA and RMSNorm in llama)."""
    model = decoder(name)
    w = factors(model)
    for mode in ("Q", "K", "V"):
        scores = composition_scores(model, mode)
        assert scores.shape == (3, 4, 3, 4)
        assert all(np.all(scores[a, :, b] == 0) for a in range(3) for b in range(a + 1))  # only l1 < l2 scores
        for l1, h1, l2, h2 in [(0, 1, 1, 2), (0, 3, 2, 0), (1, 2, 2, 3)]:
            ov = w["v"][l1, h1] @ w["o"][l1, h1]
            qk = w["q"][l2, h2] @ w["k"][l2, h2].T
            right = {"Q": qk, "K": qk.T, "V": w["v"][l2, h2] @ w["o"][l2, h2]}[mode]
            full = torch.linalg.norm(ov @ right) / (torch.linalg.norm(ov) * torch.linalg.norm(right))
            assert scores[l1, h1, l2, h2] == pytest.approx(float(full), rel=1e-9)
    if name == "gpt2":  # LayerNorm: reading weights centred over d_model, writing weights too
        assert torch.allclose(w["q"].mean(dim=-2), torch.zeros((), dtype=torch.float64), atol=1e-12)
        assert torch.allclose(w["o"].mean(dim=-1), torch.zeros((), dtype=torch.float64), atol=1e-12)
    with pytest.raises(ValueError, match="mode must be"):
        composition_scores(model, "O")


def test_one_heads_composition_is_its_column_of_the_whole_table():
    model = decoder("llama")
    for mode in ("Q", "K", "V"):
        table = composition_scores(model, mode)
        for layer, head in [(1, 0), (2, 3)]:
            assert np.allclose(composition_with(model, layer, head, mode), table[:layer, :, layer, head], rtol=1e-12)
    assert composition_with(model, 0, 1, "K").shape == (0, 4)


@pytest.mark.parametrize("name", ["llama", "gpt2", "neox", "granite"])
def test_the_stream_decomposes_into_parts_that_sum_to_it_and_heads_that_sum_to_their_layer(name):
    model = decoder(name)
    _, trace = run_with_cache(model, torch.tensor([CLEAN, CORRUPTED]), kinds=RESID_KINDS)
    stream, labels = accumulated_resid(trace)
    assert stream.shape == (4, 2, 7, 32) and labels[0] == "0_pre" and labels[-1] == "final_post"
    parts, labels = decompose_resid(model, trace)
    assert labels[:3] == ["embed", "0_attn_out", "0_mlp_out"] and len(labels) == 7
    assert torch.allclose(parts.sum(0), stream[-1], atol=1e-12)
    heads, names = stack_head_results(model, trace)
    assert heads.shape == (12, 2, 7, 32) and names[5] == "L1H1"
    for layer in range(3):
        bias = model.blocks[layer].attn.w_o.bias
        joined = heads[4 * layer : 4 * layer + 4].sum(0)
        joined = joined + (bias.detach() * model.cfg.residual_multiplier if bias is not None else 0)
        assert torch.allclose(joined, parts[1 + 2 * layer], atol=1e-12), layer


def test_the_decomposition_refuses_a_post_norm_model_and_an_incomplete_capture(tiny_model, ids):
    _, trace = run_with_cache(tiny_model, ids, kinds=RESID_KINDS)
    if tiny_model.cfg.norm != "pre":
        with pytest.raises(ValueError, match="pre-norm"):
            decompose_resid(tiny_model, trace)
    _, partial = run_with_cache(decoder("llama"), torch.tensor([CLEAN]), kinds=["resid_pre"], layers=[1, 2])
    with pytest.raises(KeyError, match="at every layer"):
        accumulated_resid(partial)


def test_a_circuit_card_says_which_embedding_it_reads_and_how_like_the_heads_input_that_is():
    from model.analysis.circuits import circuit, effective_embedding

    model = decoder("llama")  # RoPE: the stream entering layer 0 is the token embedding itself
    first = circuit(model, 0, 1, CLEAN)
    assert first.embedding == "direct" and first.reads_like == pytest.approx(1.0)
    later = circuit(model, 2, 1, CLEAN)
    assert later.embedding == "effective" and -1.0 <= later.reads_like < 0.999
    assert circuit(model, 2, 1, CLEAN, embedding="direct").embedding == "direct"
    mine, of = later.self_in_top5
    assert of == len(set(CLEAN)) and 0 <= mine <= of
    # the effective embedding is block 0's output for the token read alone, normalised
    alone = run_with_hooks(model, [CLEAN[1]], [("blocks.0.hook_resid_post", lambda x, h: None)])
    kept = {}
    run_with_hooks(model, [CLEAN[1]], [("blocks.0.hook_resid_post", lambda x, h: kept.update(x=x))])
    x = kept["x"][0, 0].double()
    assert torch.allclose(effective_embedding(model, [CLEAN[1]])[0], x / x.pow(2).mean().sqrt(), atol=1e-9)
    assert alone.shape == (1, 1, 32)
    with pytest.raises(ValueError, match="embedding must be"):
        circuit(model, 1, 0, CLEAN, embedding="tied")


def test_a_sweep_is_computed_once_per_model_and_inputs_until_a_weight_changes_or_a_hook_is_attached(monkeypatch):
    from model.analysis import patching

    model = decoder("gpt2")
    runs = []
    real = patching.patch_sweep
    monkeypatch.setattr(patching, "patch_sweep", lambda *a, **k: runs.append(1) or real(*a, **k))
    metric = Metric(9, 3)
    first = activation_patching(model, CLEAN, CORRUPTED, metric, ["z"])
    again = activation_patching(model, [CLEAN], torch.tensor([CORRUPTED]), metric, ["z"])  # the same inputs
    assert again is first and len(runs) == 1
    activation_patching(model, CLEAN, CORRUPTED, Metric(9, 4), ["z"])  # another metric: computed
    assert len(runs) == 2
    with torch.no_grad():
        model.blocks[1].attn.w_o.weight[0, 0] += 1.0  # an in-place edit: the kept result no longer holds
    changed = activation_patching(model, CLEAN, CORRUPTED, metric, ["z"])
    assert len(runs) == 3 and not np.allclose(changed.raw["z"], first.raw["z"])
    with hooks(model, [("blocks.0.attn.hook_z", lambda z, h: z * 0)]):  # hooked: neither read nor kept
        ablated = activation_patching(model, CLEAN, CORRUPTED, metric, ["z"])
    assert len(runs) == 4 and not np.allclose(ablated.raw["z"], changed.raw["z"])
    assert activation_patching(model, CLEAN, CORRUPTED, metric, ["z"]) is changed and len(runs) == 4
    paths = path_patching(model, CLEAN, CORRUPTED, metric)
    assert path_patching(model, CLEAN, CORRUPTED, metric, "logits") is paths


@pytest.mark.parametrize("name", ["llama", "gpt2", "granite"])
def test_a_padded_batch_of_texts_gives_each_text_what_it_gives_alone(name):
    """Logit lens and direct logit attribution over texts of 7, 4 and 5 tokens in one padded, masked pass."""
    from model.analysis.lens import (
        direct_logit_attribution,
        direct_logit_attribution_batch,
        logit_lens,
        logit_lens_batch,
        mean_attribution,
        mean_target_prob,
    )

    model = decoder(name)
    rows = [CLEAN, [2, 8, 4, 6], [1, 5, 8, 9, 3]]
    targets, foils = [9, 20, 3], [3, 21, 9]
    lenses = logit_lens_batch(model, rows, targets)
    for row, target, lens in zip(rows, targets, lenses, strict=True):
        alone = logit_lens(model, row, [-1], target)
        assert lens.positions.tolist() == [len(row) - 1]
        assert np.array_equal(lens.top_ids, alone.top_ids) and np.allclose(lens.top_probs, alone.top_probs, atol=1e-6)
        assert np.array_equal(lens.target_rank, alone.target_rank)
    assert mean_target_prob(lenses).shape == (4,)
    parts = direct_logit_attribution_batch(model, rows, targets, foils)
    for row, t, f, part in zip(rows, targets, foils, parts, strict=True):
        alone = direct_logit_attribution(model, row, t, f)
        assert part.position == len(row) - 1 and part.logit == pytest.approx(alone.logit, abs=1e-9)
        assert np.allclose(part.heads, alone.heads, atol=1e-9) and np.allclose(part.mlps, alone.mlps, atol=1e-9)
        assert part.total == pytest.approx(part.logit, abs=1e-9)  # the parts still sum to each text's logit
    mean = mean_attribution(parts)
    assert np.allclose(mean["heads"], np.mean([p.heads for p in parts], axis=0))


@pytest.mark.slow
def test_the_trained_induction_heads_read_the_previous_token_head_through_their_keys(default_run):
    """Watch it learn's default run: every layer-1 head that became an induction head K-composes most with the
    layer-0 head that attends to the previous token (and the Causes view says which it reads)."""
    from model.learn.store import loaded_model
    from viz.notebook import show

    run, _ = default_run
    scores = run.snapshots[-1].scores
    previous, induction = scores["previous"].float().numpy(), scores["task"].float().numpy()
    prev_head = int(np.argmax(previous[0]))
    assert previous[0, prev_head] > 0.8
    loaded = loaded_model(run)
    k = composition_scores(loaded.model, "K")
    formed = [h for h in range(loaded.model.cfg.n_heads) if induction[1, h] > 0.5]
    assert formed
    for head in formed:
        assert int(np.argmax(k[0, :, 1, head])) == prev_head, (head, k[0, :, 1, head])
    text = "".join(loaded.tokenizer.id_to_token(i) for i in run.probe.ids[0].tolist()[:16])
    fig = show(loaded, text, "composition", layer=1, head=formed[0])  # a toy vocabulary: the text's head kinds
    assert f"Strongest: L0H{prev_head}" in fig.caption
