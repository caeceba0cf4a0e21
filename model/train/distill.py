"""Attention distillation: chosen student heads learn to copy chosen heads of a pretrained teacher.

MiniLM (Wang et al., 2020) was itself trained by making a student match its teacher's self-attention.
Here the teacher is all-MiniLM-L6-v2, which shares the student's vocabulary (BERT's uncased WordPiece),
so both see the same token ids and their attention maps line up cell for cell; a few student heads
are pulled towards a few teacher heads with KL(teacher ‖ student) on every query row, on top of the
masked-language-model loss. The rest of the student's heads stay free.

Pairs are written ``student=teacher`` as ``layer.head``: ``"0.0=0.2,0.1=0.7"`` makes the student's
layer 0 head 0 copy the teacher's layer 0 head 2, and so on.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import torch
from torch import nn

from model.transformer import Transformer


@dataclass(frozen=True)
class HeadPair:
    """One student head (layer, head) that learns the attention pattern of one teacher head."""

    student: tuple[int, int]
    teacher: tuple[int, int]


def parse_pairs(text: str) -> list[HeadPair]:
    """``"0.0=0.2,1.3=3.1"`` -> pairs (student layer.head = teacher layer.head). Empty text: none."""
    pairs = []
    for item in filter(None, (part.strip() for part in text.split(","))):
        try:
            left, right = item.split("=")
            s_layer, s_head = (int(v) for v in left.split("."))
            t_layer, t_head = (int(v) for v in right.split("."))
        except ValueError as exc:
            raise ValueError(f"distillation pair {item!r}: write student=teacher as layer.head=layer.head") from exc
        pairs.append(HeadPair((s_layer, s_head), (t_layer, t_head)))
    return pairs


def check_pairs(pairs: Sequence[HeadPair], student: Transformer, teacher: Transformer) -> None:
    """Raise ValueError when a pair names a head that one of the two models does not have."""
    for pair in pairs:
        for (layer, head), cfg, who in ((pair.student, student.cfg, "student"), (pair.teacher, teacher.cfg, "teacher")):
            if not (0 <= layer < cfg.n_layers and 0 <= head < cfg.n_heads):
                raise ValueError(
                    f"{who} has no layer {layer} head {head} ({cfg.n_layers} layers × {cfg.n_heads} heads)"
                )
    if len({p.student for p in pairs}) != len(pairs):
        raise ValueError("each student head can copy only one teacher head")


@contextlib.contextmanager
def attention_taps(model: nn.Module, layers: Sequence[int]) -> Iterator[dict[int, torch.Tensor]]:
    """Inside the block, every forward pass of ``model`` leaves the attention pattern of each of ``layers``
    in the yielded dict (layer -> (B, H, N, N)), still attached to the graph so a loss can train it.
    The hooks are removed in ``finally``, also when the forward pass raises."""
    seen: dict[int, torch.Tensor] = {}
    handles = []

    def keeper(layer: int):
        def hook(_mod: nn.Module, _inp: tuple, out: torch.Tensor) -> None:
            seen[layer] = out

        return hook

    try:
        for layer in sorted(set(layers)):
            handles.append(model.blocks[layer].attn.hook_pattern.register_forward_hook(keeper(layer)))
        yield seen
    finally:
        for handle in handles:
            handle.remove()


@torch.no_grad()
def teacher_patterns(teacher: Transformer, ids: torch.Tensor, layers: Sequence[int]) -> dict[int, torch.Tensor]:
    """The teacher's attention patterns of ``layers`` for ids (B, N): layer -> (B, H, N, N).

    Runs only the blocks up to the deepest layer asked for (the rest cannot change them)."""
    teacher.eval()
    wanted = sorted(set(layers))
    with attention_taps(teacher, wanted) as seen:
        x = teacher.embed(ids)  # (B, N, d_model)
        for block in teacher.blocks[: wanted[-1] + 1]:
            x = block(x)
    return {layer: seen[layer].detach() for layer in wanted}


def distill_loss(
    student: dict[int, torch.Tensor],
    teacher: dict[int, torch.Tensor],
    pairs: Sequence[HeadPair],
    rows: int | None = None,
) -> torch.Tensor:
    """Mean over pairs and query rows of KL(teacher ‖ student) between the paired heads' patterns.

    student, teacher: layer -> (B, H, N, N) patterns; ``rows``: use only the first ``rows`` sequences of
    the student's batch (the teacher was run on those). Returns a scalar (nats)."""
    total = torch.zeros(())
    eps = 1e-8
    for pair in pairs:
        t = teacher[pair.teacher[0]][:, pair.teacher[1]]  # (B', N, N)
        s = student[pair.student[0]][: rows or t.size(0), pair.student[1]]  # (B', N, N)
        kl = (t * (torch.log(t + eps) - torch.log(s + eps))).sum(dim=-1)  # (B', N)
        total = total + kl.mean()
    return total / max(len(pairs), 1)
