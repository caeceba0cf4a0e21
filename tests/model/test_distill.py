"""Attention distillation: pairs, hooks that always go away, the loss, and a head that really learns."""

import pytest
import torch

from model import run_with_cache
from model.config import TransformerConfig
from model.train.distill import HeadPair, attention_taps, check_pairs, distill_loss, parse_pairs, teacher_patterns
from model.transformer import Transformer


def tiny(layers: int = 2, heads: int = 2, seed: int = 0) -> Transformer:
    torch.manual_seed(seed)
    cfg = TransformerConfig(vocab_size=50, d_model=16, n_heads=heads, n_layers=layers, d_ff=32, max_seq_len=32)
    return Transformer(cfg).eval()


def test_parse_pairs_reads_student_equals_teacher():
    assert parse_pairs("0.0=0.2, 1.3=3.1") == [HeadPair((0, 0), (0, 2)), HeadPair((1, 3), (3, 1))]
    assert parse_pairs("") == []
    with pytest.raises(ValueError, match=r"layer\.head"):
        parse_pairs("0=0.2")


def test_check_pairs_names_the_missing_head_and_a_head_used_twice():
    student, teacher = tiny(2, 2), tiny(3, 4)
    check_pairs([HeadPair((1, 1), (2, 3))], student, teacher)
    with pytest.raises(ValueError, match="teacher has no layer 3 head 0"):
        check_pairs([HeadPair((0, 0), (3, 0))], student, teacher)
    with pytest.raises(ValueError, match="student has no layer 0 head 2"):
        check_pairs([HeadPair((0, 2), (0, 0))], student, teacher)
    with pytest.raises(ValueError, match="only one"):
        check_pairs([HeadPair((0, 0), (0, 0)), HeadPair((0, 0), (1, 1))], student, teacher)


def test_taps_are_removed_even_when_the_forward_pass_raises():
    model = tiny()
    with pytest.raises(ValueError), attention_taps(model, [0, 1]):
        model(torch.zeros(1, 40, dtype=torch.long))  # longer than max_seq_len: raises inside the block
    assert all(not b.attn.hook_pattern._forward_hooks for b in model.blocks)


def test_teacher_patterns_match_a_full_forward_pass_though_they_stop_early():
    model = tiny(3, 2)
    ids = torch.randint(0, 50, (2, 9))
    got = teacher_patterns(model, ids, [1, 0])
    _, trace = run_with_cache(model, ids, kinds=["pattern"])
    assert set(got) == {0, 1}
    for layer in (0, 1):
        torch.testing.assert_close(got[layer], trace.get("pattern", layer))


def test_loss_is_zero_for_equal_patterns_and_positive_otherwise():
    torch.manual_seed(0)
    a = torch.softmax(torch.randn(2, 3, 5, 5), dim=-1)
    b = torch.softmax(torch.randn(2, 3, 5, 5), dim=-1)
    pair = [HeadPair((0, 1), (0, 2))]
    assert distill_loss({0: a}, {0: a.roll(1, dims=1)}, pair).item() == pytest.approx(0.0, abs=1e-6)
    assert distill_loss({0: a}, {0: b}, pair).item() > 0.05


@pytest.mark.slow
def test_a_student_head_learns_to_look_at_the_previous_token():
    """Only the distillation loss, a teacher that looks at the previous token: the student head follows."""
    model = tiny(1, 2).train()
    n = 12
    target = torch.zeros(4, 1, n, n)
    target[:, 0, torch.arange(1, n), torch.arange(n - 1)] = 1.0
    target[:, 0, 0, 0] = 1.0
    pairs = [HeadPair((0, 1), (0, 0))]
    opt = torch.optim.Adam(model.parameters(), lr=3e-2)
    ids = torch.randint(0, 50, (4, n))

    def previous_mass() -> float:
        _, trace = run_with_cache(model.eval(), ids, kinds=["pattern"])
        p = trace.get("pattern", 0)[:, 1]  # (B, N, N)
        return float(p[:, torch.arange(1, n), torch.arange(n - 1)].mean())

    before = previous_mass()
    model.train()
    for _ in range(60):
        with attention_taps(model, [0]) as taps:
            model(ids)
        loss = distill_loss(taps, {0: target}, pairs)
        opt.zero_grad()
        loss.backward()
        opt.step()
    assert before < 0.3 and previous_mass() > 0.8
