"""What a load read, and what became of every tensor in the file: used, provably redundant, or left out and named.

Every importer fills one :class:`LoadReport` through a :class:`Ledger` of the file's tensors: a family takes the
tensors it uses, marks a copy it proved redundant (a tied head equal to the embeddings), and :meth:`Ledger.settle`
classifies the rest by one shared table — buffers that hold nothing learned, and heads no page reads (a pooler, a
classifier), each named with what it is. A tensor that no rule accounts for is handed back, and the load is refused
with its name: nothing a file holds is skipped in silence. The report is on ``LoadedModel.report`` for the API and in
the app's About box.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import torch

#: heads and layers that no page reads, by the first part of their name below the model's wrapper: what each is.
#: None of them changes an attention weight, a hidden state, an MLM or a next-token prediction.
LEFT_OUT: tuple[tuple[str, str], ...] = (
    ("pooler.", "the pooler (dense + tanh over the first token), read only by sentence-classification heads"),
    ("cls.seq_relationship.", "the next-sentence-prediction head"),
    ("pre_classifier.", "a classification head's first layer"),
    ("classifier.", "a classification head"),
    ("qa_outputs.", "a question-answering head"),
    ("score.", "a sequence-classification head"),
    ("discriminator_predictions.", "ELECTRA's replaced-token-detection head (one score per token)"),
    ("sop_classifier.", "the sentence-order-prediction head"),
)


@dataclass
class LoadReport:
    """What one load read and what it did with each tensor (names as the file spells them)."""

    family: str = ""  # how the file was read ("BERT (post-norm encoder, …)")
    files: list[str] = field(default_factory=list)  # the files read, by name
    unread: list[str] = field(default_factory=list)  # other files beside them, not read
    dtypes: list[str] = field(default_factory=list)  # how the tensors were stored ("bfloat16")
    used: list[str] = field(default_factory=list)  # tensors that are weights of the model as built
    redundant: dict[str, str] = field(default_factory=dict)  # tensor -> why it adds nothing
    left_out: dict[str, str] = field(default_factory=dict)  # tensor -> what it is (no page reads it)
    tokenizer: str = ""  # where the tokenizer came from, or what was looked for
    notes: list[str] = field(default_factory=list)  # decisions a reader should know (an untied head found, …)

    def summary(self) -> list[str]:
        """The report in a few sentences, for the About box and the command line."""
        lines = []
        if self.files:
            lines.append(f"Files read: {', '.join(self.files)}")
        if self.dtypes:
            lines.append(f"Weights stored as {', '.join(self.dtypes)}")
        if self.unread:
            lines.append(f"Not read: {', '.join(self.unread)}")
        total = len(self.used) + len(self.redundant) + len(self.left_out)
        if total:
            lines.append(
                f"Tensors: {len(self.used)} of {total} used"
                + (f", {len(self.redundant)} redundant" if self.redundant else "")
                + (f", {len(self.left_out)} left out" if self.left_out else "")
            )
        for kind, table in (("Redundant", self.redundant), ("Left out", self.left_out)):
            for what, names in _grouped(table).items():
                lines.append(f"{kind}: {_names(names)} — {what}")
        if self.tokenizer:
            lines.append(f"Tokenizer: {self.tokenizer}")
        lines.extend(self.notes)
        return lines

    def to_dict(self) -> dict[str, Any]:
        return {
            "family": self.family,
            "files": list(self.files),
            "unread": list(self.unread),
            "dtypes": list(self.dtypes),
            "used": list(self.used),
            "redundant": dict(self.redundant),
            "left_out": dict(self.left_out),
            "tokenizer": self.tokenizer,
            "notes": list(self.notes),
        }


def _grouped(table: Mapping[str, str]) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for name, what in table.items():
        out.setdefault(what, []).append(name)
    return out


def _names(names: list[str]) -> str:
    return ", ".join(names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")


class Ledger:
    """A checkpoint's tensors under normalised names (the file's own names kept for the report), and what became of
    each: taken (a weight of the model), redundant (with the proof's words) or left out (with what it is)."""

    def __init__(self, tensors: Mapping[str, torch.Tensor], original: Mapping[str, str] | None = None) -> None:
        self.tensors = dict(tensors)
        self.original = dict(original or {})  # normalised name -> the file's
        self.taken: set[str] = set()
        self.redundant: dict[str, str] = {}
        self.left_out: dict[str, str] = {}

    def __contains__(self, name: str) -> bool:
        return name in self.tensors

    def peek(self, name: str) -> torch.Tensor | None:
        """The tensor, without accounting for it."""
        return self.tensors.get(name)

    def take(self, name: str) -> torch.Tensor | None:
        """The tensor (None when the file lacks it), accounted for as a weight of the model."""
        if name in self.tensors:
            self.taken.add(name)
        return self.tensors.get(name)

    def mark_redundant(self, name: str, why: str) -> None:
        if name in self.tensors:
            self.redundant[name] = why

    def mark_left_out(self, name: str, what: str) -> None:
        if name in self.tensors:
            self.left_out[name] = what

    def pending(self) -> list[str]:
        return [k for k in self.tensors if k not in self.taken and k not in self.redundant and k not in self.left_out]

    def settle(self) -> dict[str, torch.Tensor]:
        """Classify what no family rule took by the shared rules; the tensors that none accounts for (they refuse
        the load as unexpected keys)."""
        rest = {}
        for name in self.pending():
            why = _buffer(name, self.tensors[name])
            what = next((w for prefix, w in LEFT_OUT if name.startswith(prefix)), None)
            if why is not None:
                self.redundant[name] = why
            elif what is not None:
                self.left_out[name] = what
            else:
                rest[self.original.get(name, name)] = self.tensors[name]
        return rest

    def fill(self, report: LoadReport) -> LoadReport:
        """Write what became of each tensor into ``report`` (the file's own names)."""
        name = self.original.get
        report.used = sorted(name(k, k) for k in self.taken)
        report.redundant = {name(k, k): v for k, v in sorted(self.redundant.items())}
        report.left_out = {name(k, k): v for k, v in sorted(self.left_out.items())}
        return report


def _buffer(name: str, tensor: torch.Tensor) -> str | None:
    """Why a tensor that no rule took holds nothing learned (a buffer saved with the weights), or None."""
    last = name.rsplit(".", 1)[-1]
    if last in ("position_ids", "token_type_ids"):
        return "an index buffer (0, 1, 2, … or zeros): transformers does not read it either"
    if last in ("bias", "masked_bias") and name.split(".")[-2] in ("attn", "attention"):
        if last == "masked_bias" and tensor.numel() == 1:
            return "the value masked scores are set to, stored as a buffer"
        square = tensor.dim() >= 2 and tensor.shape[-1] == tensor.shape[-2]
        if square and torch.equal(tensor.bool(), torch.ones_like(tensor, dtype=torch.bool).tril()):
            return "the causal mask, stored as a buffer (a lower triangle of ones)"
    return None
