import threading
import time

import pytest
import torch

from model.capture import KINDS, capture, hook_name, leftover_hooks, run_with_cache
from model.config import TransformerConfig
from model.transformer import Transformer


def test_expected_names_and_shapes(tiny_model, ids):
    _, trace = run_with_cache(tiny_model, ids)
    for layer in (0, 1):
        for kind in KINDS:  # every kind this model has: not cross-attention (an encoder–decoder's decoder), a router
            # (a mixture of experts), a learned sink (gpt-oss) or DeBERTa's position terms
            theirs = ("cross_pattern", "resid_mid_cross", "router_logits", "expert_weights", "sink", "c2p", "p2c")
            assert (hook_name(kind, layer) in trace) == (kind not in theirs)
    assert "blocks.0.attn.hook_pattern" in trace.names and "hook_embed" in trace.names
    assert trace.get("q", 0).shape == (2, 4, 10, 8)
    assert trace.get("scores", 1).shape == (2, 4, 10, 10)
    assert trace.get("z", 1).shape == (2, 4, 10, 8)
    assert trace.get("attn_out", 0).shape == (2, 10, 32)
    assert trace.get("resid_post", 1).shape == (2, 10, 32)
    assert trace.stack("pattern").shape == (2, 2, 4, 10, 10)
    for t in trace.activations.values():
        assert t.device.type == "cpu" and not t.requires_grad


def test_a_mixture_of_experts_and_a_learned_sink_have_their_hooks():
    torch.manual_seed(0)
    cfg = TransformerConfig(
        vocab_size=50, d_model=32, n_heads=4, n_layers=2, d_ff=48, activation="swiglu", n_experts=4,
        experts_per_token=2, moe_layers=(1,), attn_sinks=True, causal=True,
    )  # fmt: skip
    model = Transformer(cfg).eval()
    _, trace = run_with_cache(model, torch.tensor([[1, 2, 3, 4, 5]]))
    assert trace.layers("router_logits") == [1] and trace.get("router_logits", 1).shape == (1, 5, 4)
    weights = trace.get("expert_weights", 1)[0]  # (N, E)
    assert ((weights > 0).sum(-1) == 2).all() and torch.allclose(weights.sum(-1), torch.ones(5))
    sink = trace.get("sink", 0)  # (B, H, N)
    assert sink.shape == (1, 4, 5)
    assert torch.allclose(trace.get("pattern", 0).sum(-1) + sink, torch.ones(1, 4, 5), atol=1e-6)


def test_selective_capture_holds_only_what_was_asked(tiny_model, ids):
    _, full = run_with_cache(tiny_model, ids)
    _, some = run_with_cache(tiny_model, ids, layers=[1], kinds=["pattern"])
    assert list(some.activations) == ["blocks.1.attn.hook_pattern"]
    assert some.nbytes == 2 * 4 * 10 * 10 * 4
    assert some.nbytes < full.nbytes / 10
    _, half = run_with_cache(tiny_model, ids, layers=[1], kinds=["pattern"], dtype=torch.float16)
    assert half.nbytes == some.nbytes // 2
    with pytest.raises(KeyError, match="was not captured"):
        some.get("pattern", 0)


def test_unknown_kind_and_layer_are_refused(tiny_model):
    with pytest.raises(ValueError, match="unknown capture kind"):
        with capture(tiny_model, kinds=["attention"]):
            pass
    with pytest.raises(ValueError, match="layer 5 does not exist"):
        with capture(tiny_model, layers=[5]):
            pass


def test_capture_does_not_change_output(tiny_model, ids):
    with torch.inference_mode():
        plain = tiny_model(ids)
    captured, _ = run_with_cache(tiny_model, ids)
    assert torch.equal(plain, captured)


def test_no_hook_left_after_success_and_after_errors(tiny_model, ids):
    assert leftover_hooks(tiny_model) == 0
    with capture(tiny_model) as trace:
        assert leftover_hooks(tiny_model) > 0
        tiny_model(ids)
    assert trace.activations and leftover_hooks(tiny_model) == 0

    with pytest.raises(RuntimeError, match="boom"):
        with capture(tiny_model):
            raise RuntimeError("boom")
    assert leftover_hooks(tiny_model) == 0

    # a hook that raises inside the forward pass (a bad replacement pattern has the wrong shape)
    with pytest.raises(RuntimeError):
        with capture(tiny_model, replace_patterns={(0, 0): torch.ones(3, 3)}):
            tiny_model(ids)
    assert leftover_hooks(tiny_model) == 0


def test_ablation_of_output_and_pattern(tiny_model, ids):
    base, _ = run_with_cache(tiny_model, ids)
    out, trace = run_with_cache(tiny_model, ids, ablate=[(0, 2)], kinds=["z", "pattern"])
    assert torch.all(trace.get("z", 0)[:, 2] == 0)
    assert torch.any(trace.get("z", 0)[:, 1] != 0)
    assert not torch.allclose(out, base)
    out2, trace2 = run_with_cache(tiny_model, ids, ablate=[(0, 2)], ablate_mode="pattern", kinds=["pattern"])
    assert torch.all(trace2.get("pattern", 0)[:, 2] == 0)
    torch.testing.assert_close(out, out2)  # zero pattern => zero head output: same effect


def test_uniform_pattern_replacement_respects_padding(tiny_model):
    ids = torch.tensor([[4, 5, 6, 7, 0]])
    mask = torch.tensor([[1, 1, 1, 1, 0]])
    _, trace = run_with_cache(tiny_model, ids, mask, replace_patterns={(1, 3): "uniform"}, kinds=["pattern"])
    p = trace.get("pattern", 1)[0, 3]
    torch.testing.assert_close(p[:, :4], torch.full((5, 4), 0.25))
    assert torch.all(p[:, 4] == 0)
    with pytest.raises(ValueError, match="does not exist"):
        run_with_cache(tiny_model, ids, ablate=[(0, 9)])


def test_concurrent_threads_get_their_own_activations():
    torch.manual_seed(0)
    cfg = TransformerConfig(vocab_size=64, d_model=32, n_heads=4, n_layers=2, d_ff=64, max_seq_len=64, dropout=0.0)
    model = Transformer(cfg).eval()
    inputs = [torch.randint(0, 64, (1, 8 + i)) for i in range(8)]
    expected = [run_with_cache(model, x, kinds=["pattern"])[1].get("pattern", 1) for x in inputs]
    results: dict[int, torch.Tensor] = {}
    errors: list[BaseException] = []
    barrier = threading.Barrier(8)

    def work(i: int) -> None:
        try:
            barrier.wait()
            for _ in range(5):
                _, trace = run_with_cache(model, inputs[i], kinds=["pattern"])
                got = trace.get("pattern", 1)
                assert torch.equal(got, expected[i]), f"thread {i} saw someone else's pattern"
            results[i] = got
        except BaseException as exc:
            errors.append(exc)

    # plain forwards from other threads, without capture, must not leak into the traces either
    def noise() -> None:
        barrier_free = torch.randint(0, 64, (1, 30))
        for _ in range(20):
            with torch.inference_mode():
                model(barrier_free)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(8)] + [threading.Thread(target=noise)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    assert sorted(results) == list(range(8))
    assert leftover_hooks(model) == 0


def test_captures_on_one_model_overlap_and_stay_apart(tiny_model):
    """Thread A opens a capture (with an intervention) and waits inside it; thread B captures and runs the same
    model meanwhile. With a lock per model B would wait for A and A for B: the timeouts turn that into a failure."""
    x_a, x_b = torch.randint(0, 64, (1, 6)), torch.randint(0, 64, (1, 9))
    clean_b = run_with_cache(tiny_model, x_b, kinds=["pattern"])[1].get("pattern", 0)
    ablated_a = run_with_cache(tiny_model, x_a, kinds=["z"], ablate=[(0, 1)])[1].get("z", 0)
    b_done = threading.Event()
    got: dict[str, torch.Tensor] = {}
    errors: list[BaseException] = []

    def a() -> None:
        try:
            with capture(tiny_model, kinds=["z"], ablate=[(0, 1)]) as trace, torch.inference_mode():
                assert b_done.wait(timeout=20), "B never ran while A's capture was open"
                tiny_model(x_a)
            got["a"] = trace.get("z", 0)
        except BaseException as exc:
            errors.append(exc)

    def b() -> None:
        try:
            _, trace = run_with_cache(tiny_model, x_b, kinds=["pattern"])  # A's hooks are attached right now
            got["b"] = trace.get("pattern", 0)
        except BaseException as exc:
            errors.append(exc)
        finally:
            b_done.set()

    first = threading.Thread(target=a)
    first.start()
    while leftover_hooks(tiny_model) == 0 and first.is_alive():  # until A's hooks are in place
        time.sleep(0.001)
    second = threading.Thread(target=b)
    second.start()
    second.join(timeout=30)
    first.join(timeout=30)
    assert not errors, errors
    assert torch.equal(got["b"], clean_b), "B's pattern was touched by A's ablation"
    assert torch.equal(got["a"], ablated_a) and torch.all(got["a"][:, 1] == 0)
    assert leftover_hooks(tiny_model) == 0


def test_run_with_cache_refuses_training_mode(tiny_model, ids):
    tiny_model.train()
    with pytest.raises(ValueError, match="eval"):
        run_with_cache(tiny_model, ids)


def test_names_filter_as_transformer_lens_takes_it(tiny_model, ids):
    """A callable, one name or a list of hook names (TransformerLens's ``names_filter``): exactly those are kept."""
    _, trace = run_with_cache(tiny_model, ids, names_filter=lambda n: n.endswith("attn.hook_pattern"))
    n_layers = tiny_model.cfg.n_layers
    assert sorted(trace.activations) == sorted(hook_name("pattern", i) for i in range(n_layers))
    _, trace = run_with_cache(tiny_model, ids, names_filter=[hook_name("z", 1), "hook_embed"])
    assert set(trace.activations) == {hook_name("z", 1), "hook_embed"}
    _, trace = run_with_cache(tiny_model, ids, names_filter=hook_name("q", 0))
    assert list(trace.activations) == [hook_name("q", 0)] and trace[hook_name("q", 0)].shape[0] == ids.shape[0]
    with pytest.raises(ValueError, match=r"no hook point 'blocks\.0\.attn\.hook_nothing'"):
        run_with_cache(tiny_model, ids, names_filter=["blocks.0.attn.hook_nothing"])
    with pytest.raises(ValueError, match="not both"):
        run_with_cache(tiny_model, ids, kinds=["pattern"], names_filter=lambda n: True)
    assert leftover_hooks(tiny_model) == 0


def test_to_str_tokens_names_every_token_as_the_tokenizer_spells_it():
    from model.io.catalog import ModelSpec, load

    loaded = load(ModelSpec("bundled"))
    tokens = loaded.to_str_tokens("The animal didn't cross.")
    assert tokens == ["[CLS]", "the", "animal", "didn", "'", "t", "cross", ".", "[SEP]"]
    assert len(tokens) == len(loaded.tokenizer.encode("The animal didn't cross.").ids)


def test_stacked_kinds_are_written_into_one_tensor_equal_to_the_layers_kept_apart(tiny_model, ids):
    """``stacked``: each layer written into one (L, ...) tensor as it comes, the layer's own tensor not kept (half
    a capture's memory: SmolLM2's patterns at 512 tokens peaked 575 MB over the model, now 303), the same numbers
    bit for bit; a kind not stacked is kept apart as before."""
    _, apart = run_with_cache(tiny_model, ids, kinds=["pattern", "q"])
    _, stacked = run_with_cache(tiny_model, ids, kinds=["pattern", "q"], stacked=["pattern"])
    whole = stacked.stack("pattern")
    assert whole is stacked.stacks["pattern"] and set(stacked.stacks) == {"pattern"}  # no copy, q not stacked
    assert whole.shape == (tiny_model.cfg.n_layers, *apart.get("pattern", 0).shape)
    assert torch.equal(whole, apart.stack("pattern")) and torch.equal(stacked.stack("q"), apart.stack("q"))
    for layer in range(tiny_model.cfg.n_layers):  # each layer's tensor is a view of the stack, not a copy
        assert stacked.get("pattern", layer).data_ptr() == whole[layer].data_ptr()
    _, some = run_with_cache(tiny_model, ids, layers=[1], kinds=["pattern"], stacked=["pattern"])
    assert some.stack("pattern").shape[0] == 1 and torch.equal(some.stack("pattern")[0], apart.get("pattern", 1))
