"""Needle-in-a-haystack prompts: a short fact planted at a chosen depth of a long filler text (the bundled held-out
documents), a question at the end (Kamradt's test, as model/analysis/needle.py runs it).

Shapes: token positions of a haystack of N tokens.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

NEEDLE = " The best thing to do in San Francisco is eat a sandwich and sit in Dolores Park on a sunny day."
ANSWER = "eat a sandwich and sit in Dolores Park on a sunny day"  # the part of the needle a right answer repeats
QUESTION = (
    "\n\nQuestion: What is the best thing to do in San Francisco?\nAnswer: The best thing to do in San Francisco is"
)


@dataclass(frozen=True)
class Haystack:
    """One prompt: filler with the needle at ``depth`` (0 = first, 1 = last), then the question; about ``length``
    tokens (the pieces meet inside words sometimes). needle: (start, end) token positions of the needle sentence;
    answer: those of the answer inside it."""

    text: str
    ids: tuple[int, ...]
    needle: tuple[int, int]
    answer: tuple[int, int]
    length: int
    depth: float


def haystack(tokenizer, filler: str, length: int, depth: float, needle: str = NEEDLE,
             question: str = QUESTION, answer: str = ANSWER) -> Haystack:  # fmt: skip
    """Filler text, the needle inserted after the last sentence end before ``depth`` of it (as Kamradt's test
    places it), and the question, at most ``length`` tokens in all; built as text, so the text box reads the same
    tokens (pieces that meet inside a word can take a token more: the filler is then cut by as many)."""

    def ordinary(text: str) -> int:  # tokens a piece adds ([CLS], [SEP] come once, around the whole)
        return sum(not s for s in tokenizer.encode(text, max_len=10_000).special)

    extra = len(tokenizer.encode("", max_len=10)) - ordinary("")  # special tokens of any text: [CLS] … [SEP]
    budget = length - ordinary(needle) - ordinary(question) - extra
    filler = _beginning(filler, budget, ordinary)
    if budget < 1 or ordinary(filler) < budget:
        raise ValueError(f"a haystack of {length} tokens needs {max(budget, 1)} filler tokens")
    while True:
        hay = _assemble(tokenizer, filler, budget, extra, depth, needle, question, answer)
        if len(hay.ids) <= length or budget <= 1:
            return Haystack(hay.text, hay.ids, hay.needle, hay.answer, length, depth)
        budget -= len(hay.ids) - length


def _beginning(filler: str, budget: int, ordinary: Callable[[str], int]) -> str:
    """The filler's beginning that holds ``budget`` tokens and 64 more (tokenising all 870 kB of it for every haystack
    took 0.4 s): its first ``budget`` tokens are the whole filler's, the cut lying far after them."""
    size = 8 * max(budget, 1) + 4096
    while size < len(filler):
        if ordinary(filler[:size]) >= budget + 64:
            return filler[:size]
        size *= 2
    return filler


def _assemble(tokenizer, filler, budget, extra, depth, needle, question, answer) -> Haystack:
    enc = tokenizer.encode(filler, max_len=budget + extra)
    text = filler[: max(b for b, s in zip((o[1] for o in enc.offsets), enc.special, strict=True) if not s)]
    first = enc.special.index(False)  # filler token positions start after a leading special token
    enc_ids, enc_special = enc.ids[first:], enc.special[first:]
    cut, label = round(budget * depth), tokenizer.id_to_token
    ends = [i + 1 for i in range(cut) if not enc_special[i] and label(enc_ids[i]).rstrip().endswith(".")]
    cut = ends[-1] if ends and depth < 1 else cut  # a sentence break, not the middle of a word
    at = enc.offsets[first + cut - 1][1] if cut else 0
    full = text[:at] + needle + text[at:] + question
    ids, offsets = (e := tokenizer.encode(full, max_len=10 * len(full) + 10)).ids, e.offsets

    def tokens_of(start: int, end: int) -> tuple[int, int]:
        inside = [i for i, (a, b) in enumerate(offsets) if max(a, start) < min(b, end)]  # " eat" holds its space
        return inside[0], inside[-1] + 1

    where = at + needle.index(answer)
    return Haystack(full, tuple(ids), tokens_of(at, at + len(needle)), tokens_of(where, where + len(answer)), 0, depth)


def filler_text() -> str:
    """The haystack's filler: the bundled held-out documents (assets/corpus), tens of thousands of tokens."""
    from model.profile.corpus import bundled_documents

    return "\n\n".join(bundled_documents())
