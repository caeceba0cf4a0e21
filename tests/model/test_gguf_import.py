"""SmolLM2-135M from its GGUF file: parity with Hugging Face's LlamaForCausalLM through a committed fixture.

The fixture (scripts/make_smollm_fixture.py) was made by transformers' own GGUF reader, dequantiser and
LLaMA code with eager attention; nothing of ours took part in it.
"""

from pathlib import Path

import pytest
import torch
from safetensors import safe_open
from safetensors.torch import load_file

from model.capture import run_with_cache
from model.generate import generate, next_token_predictions
from model.transformer import Transformer

pytestmark = pytest.mark.slow
FIXTURE = Path(__file__).resolve().parent.parent / "fixtures" / "smollm2_reference.safetensors"
INPUTS = ("plain", "non_ascii", "repeated")


@pytest.fixture(scope="module")
def ref():
    return load_file(str(FIXTURE))


def texts() -> dict[str, str]:
    with safe_open(str(FIXTURE), "pt") as f:
        return eval(f.metadata()["texts"], {})  # a repr of a dict of str written by our own script


def test_config_from_the_file(smollm):
    cfg = smollm.model.cfg
    assert (cfg.n_layers, cfg.n_heads, cfg.kv_heads, cfg.d_model, cfg.d_ff) == (30, 9, 3, 576, 1536)
    assert (cfg.norm_kind, cfg.activation, cfg.positional, cfg.rope_base) == ("rmsnorm", "swiglu", "rope", 1e5)
    assert cfg.causal and cfg.lm_head and cfg.vocab_size == 49152
    assert cfg.parameter_count() == sum(p.numel() for p in smollm.model.parameters())


@pytest.mark.parametrize("key", ["plain", "non_ascii"])
def test_tokenizer_matches_hugging_face(smollm, ref, key):
    assert list(smollm.tokenizer.encode(texts()[key]).ids) == ref[f"{key}.ids"].tolist()


def test_q_and_k_rows_are_hugging_face_layout(smollm, ref):
    attn = smollm.model.blocks[0].attn
    assert torch.allclose(attn.w_q.weight[:64], ref["q_proj_layer0_head0"], atol=1e-6)
    assert torch.allclose(attn.w_k.weight[:64], ref["k_proj_layer0_head0"], atol=1e-6)


def near(got: torch.Tensor, want: torch.Tensor, rel: float = 2e-6) -> bool:
    """Within 1e-4 plus ``rel`` of the tensor's largest value: float32 summed in another order errs with the size of
    the row, not of the element (on one host 1.2e-4 on a hidden value of 2.7 in a row reaching 50)."""
    return (got - want).abs().max().item() <= 1e-4 + rel * want.abs().max().item()


@pytest.mark.parametrize("key", INPUTS)
def test_parity_with_hugging_face(smollm, ref, key):
    model = smollm.model
    ids = ref[f"{key}.ids"][None]
    hidden, trace = run_with_cache(model, ids, kinds=["pattern", "resid_pre"])
    assert near(hidden[0], ref[f"{key}.hidden"])
    mid = trace.get("resid_pre", 15)[0]
    expected_mid = ref[f"{key}.resid_mid_layer"]
    assert ((mid - expected_mid).abs().max() / expected_mid.abs().max()).item() <= 1e-5  # residual ~1e3-1e4
    with torch.inference_mode():
        logits = model.lm_logits(hidden)[0]
    assert near(logits[:, ref["logit_columns"]], ref[f"{key}.logits_columns"])
    assert near(logits[-1], ref[f"{key}.logits_last"])
    patterns = trace.stack("pattern")[:, 0]  # (L, H, N, N)
    # weights are at most 1: 1.8e-5 on one host's float32 kernels (3.5e-6 to 9e-6 on the other inputs)
    assert (patterns - ref[f"{key}.attentions"]).abs().max().item() <= 5e-5


@pytest.mark.parametrize("key", INPUTS)
def test_greedy_continuation_matches_and_the_cache_is_exact(smollm, ref, key):
    ids = ref[f"{key}.ids"].tolist()
    n = len(ref[f"{key}.greedy"])
    cached = generate(smollm.model, ids, n)
    uncached = generate(smollm.model, ids, n, use_cache=False)
    assert [s.token for s in cached] == ref[f"{key}.greedy"].tolist() == [s.token for s in uncached]
    for a, b in zip(cached, uncached, strict=True):
        assert a.rows.shape == b.rows.shape
        assert (
            abs(a.rows - b.rows).max() <= 5e-5
        )  # float32 rounding of other matmul shapes; the cached step's attention row is the full pass's row


def test_interleaved_rope_on_llama_cpp_rows_gives_the_same_patterns(smollm, ref):
    """llama.cpp keeps W_q/W_k permuted and rotates interleaved pairs; that is the same attention. The wrong
    pairing (rotate-half on permuted rows) is not: the test can tell them apart."""
    from model.io.gguf import unpermute_rope_rows

    def permute(w: torch.Tensor, heads: int) -> torch.Tensor:  # llama.cpp's convert: the inverse of ours
        out, d_in = w.shape
        return w.reshape(heads, 2, out // heads // 2, d_in).transpose(1, 2).reshape(out, d_in)

    cfg = smollm.model.cfg
    state = dict(smollm.model.state_dict())
    for i in range(cfg.n_layers):
        state[f"blocks.{i}.attn.w_q.weight"] = permute(state[f"blocks.{i}.attn.w_q.weight"], cfg.n_heads)
        state[f"blocks.{i}.attn.w_k.weight"] = permute(state[f"blocks.{i}.attn.w_k.weight"], cfg.kv_heads)
    w = smollm.model.blocks[3].attn.w_k.weight
    assert torch.equal(unpermute_rope_rows(permute(w, cfg.kv_heads), cfg.kv_heads), w)
    ids = ref["plain.ids"][None]
    expected = ref["plain.attentions"]
    for style, same in (("interleaved", True), ("half", False)):
        model = Transformer(cfg.replace(rope_style=style)).eval()
        model.load_state_dict(state)
        _, trace = run_with_cache(model, ids, kinds=["pattern"], layers=[1])
        diff = (trace.get("pattern", 1)[0] - expected[1]).abs().max().item()
        assert (diff <= 1e-5) is same, (style, diff)


def test_next_token_predictions(smollm, ref):
    top = next_token_predictions(smollm.model, ref["plain.ids"][None], temperature=1.0, k=5)
    first, prob = top[-1][0]
    assert smollm.tokenizer.id_to_token(first) == " Paris" and prob > 0.5
    cold = next_token_predictions(smollm.model, ref["plain.ids"][None], temperature=0.5, k=5)
    assert cold[-1][0][1] > prob  # a lower temperature sharpens the distribution
