"""The tasks a small transformer learns in front of the class ("Watch it learn"): batches drawn from a seeded
generator, a held-out probe batch, and for every task the key each query should attend to, so that each head's
score on the task is measured from its pattern.

Token-level tasks (induction, previous-token copying, sorting, reversal) use a word-level vocabulary of single
letters and digits, so the finished model also reads typed text ("a q z m a q z m") on every other page; the
masked-word task reads the bundled corpus through the bundled tokenizer with the post's own encoder.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import cache

import torch

SYMBOLS = tuple("abcdefghijklmnopqrstuvwxyz0123456789")  # 36 ordinary tokens
SPECIALS = ("[PAD]", "[BOS]", "|", "[MASK]", "[UNK]")
PAD, BOS, SEP, MASK, UNK = range(5)
PUNCT = ("-",)  # written by the date task's ISO dates; never drawn among the random letters
DASH = len(SPECIALS)
FIRST = len(SPECIALS) + len(PUNCT)  # id of the first letter or digit
IGNORE = -100  # label of a position whose prediction is not scored


@dataclass(frozen=True)
class Task:
    """What one task trains: ``causal`` (a decoder predicting the next token) or an encoder filling in [MASK];
    ``score_name``: what a head that solves it does, as its score is named on the page."""

    key: str
    title: str
    causal: bool
    score_name: str
    description: str
    seq_len: int  # the longest sequence the task makes (the model's max_seq_len)
    seq2seq: bool = False  # an encoder reads the source, a decoder writes the target through cross-attention


@dataclass(frozen=True)
class Batch:
    """ids (B, N) and labels (B, N): the token each position must predict (IGNORE where none); ``target`` (B, N):
    the key position a head solving the task attends to from each query (-1 where none is scored)."""

    ids: torch.Tensor
    labels: torch.Tensor
    target: torch.Tensor
    source: torch.Tensor | None = None  # (B, S): what the encoder reads (seq2seq tasks), else None
    special: torch.Tensor | None = None  # (B, N) bool: special tokens ([BOS], [CLS], [SEP], the bar), not queries


TASKS = {
    t.key: t
    for t in (
        Task(
            "induction", "Induction (repeated random tokens)", True, "induction",
            "Random letters, then the same letters again: the second copy is predictable only by finding the "
            "earlier occurrence of the current token and copying the one after it. The period changes from batch "
            "to batch, so no fixed offset solves it.", 49,
        ),
        Task(
            "previous", "Previous-token copying", True, "previous-token",
            "Random letters; at every position the model must say the letter before the current one.", 33,
        ),
        Task(
            "sort", "Sorting", True, "sorting-position",
            "Distinct random letters, a bar, then the same letters in alphabetical order: to write the next "
            "letter, look up the smallest one not yet written.", 27,
        ),
        Task(
            "reverse", "Reversal", True, "reversal-position",
            "Random letters, a bar, then the same letters backwards: to write the next one, look up the mirrored "
            "position.", 27,
        ),
        Task(
            "dates", "Dates to ISO (encoder–decoder, cross-attention)", True, "alignment",
            "The post's other half: an encoder reads a date as people write it (07mar1994) and a decoder writes it "
            "as ISO 8601 (1994-03-07), looking at the source through cross-attention. The year comes first in the "
            "output and last in the input, so the alignment it learns crosses over.", 12, seq2seq=True,
        ),
        Task(
            "mlm", "Masked words on the bundled corpus (the post's encoder)", False, "neighbour",
            "Windows of the bundled English corpus with 15 % of the words masked, as BERT trains; the post's "
            "encoder (bidirectional, sinusoidal positions) fills them in. Heads that look at a fixed neighbour "
            "usually form first.", 64,
        ),
    )
}  # fmt: skip


def vocabulary() -> tuple[str, ...]:
    """The token-level tasks' vocabulary: the specials, the dash, then the 36 letters and digits."""
    return SPECIALS + PUNCT + SYMBOLS


def letter_tokenizer():
    """The letter tasks' tokenizer (``tokenizers``, word level): lower-cased, one token per character, spaces
    ignored, [BOS] in front, as the training sequences begin ("abc abc" -> [BOS] a b c a b c)."""
    from tokenizers import Regex, models, normalizers, pre_tokenizers, processors
    from tokenizers import Tokenizer as HFTokenizer

    from model.io.tokenizer import Tokenizer

    vocab = {t: i for i, t in enumerate(vocabulary())}
    inner = HFTokenizer(models.WordLevel(vocab=vocab, unk_token="[UNK]"))
    inner.normalizer = normalizers.Lowercase()
    inner.pre_tokenizer = pre_tokenizers.Sequence(
        [pre_tokenizers.WhitespaceSplit(), pre_tokenizers.Split(Regex("."), behavior="isolated")]
    )
    inner.add_special_tokens(list(SPECIALS[:2]) + list(SPECIALS[3:]))
    inner.post_processor = processors.TemplateProcessing(single="[BOS] $A", special_tokens=[("[BOS]", BOS)])
    return Tokenizer(inner)


def _letters(gen: torch.Generator, b: int, n: int) -> torch.Tensor:
    return torch.randint(FIRST, FIRST + len(SYMBOLS), (b, n), generator=gen)  # (B, n) ordinary tokens


def induction(gen: torch.Generator, b: int, period: int) -> Batch:
    """[BOS] x₁…x_p x₁…x_p: labels on the second copy's positions after its first token (N = 2p + 1)."""
    half = _letters(gen, b, period)  # (B, p)
    ids = torch.cat([torch.full((b, 1), BOS), half, half], dim=1)  # (B, 2p + 1)
    n = ids.size(1)
    labels = torch.full_like(ids, IGNORE)
    labels[:, period + 1 : n - 1] = ids[:, period + 2 :]  # predictable: the copy's 2nd token on
    target = torch.full_like(ids, -1)
    q = torch.arange(period + 1, n - 1)  # queries in the second copy: the token after the earlier occurrence
    target[:, q] = q - period + 1
    return Batch(ids, labels, target)


def previous(gen: torch.Generator, b: int, n: int) -> Batch:
    """[BOS] x₁…x_{n-1}: every position after the first says the token before it."""
    ids = torch.cat([torch.full((b, 1), BOS), _letters(gen, b, n - 1)], dim=1)  # (B, N)
    labels = torch.full_like(ids, IGNORE)
    labels[:, 2:] = ids[:, 1:-1]
    target = torch.full_like(ids, -1)
    target[:, 2:] = torch.arange(1, n - 1)
    return Batch(ids, labels, target)


def ordered(gen: torch.Generator, b: int, k: int, how: str) -> Batch:
    """[BOS] x₁…x_k | y₁…y_k with y the x's sorted ("sort") or backwards ("reverse"); labels from the bar on;
    the target of the query that writes y_{t+1} is the input position holding it (N = 2k + 2)."""
    keys = torch.rand(b, len(SYMBOLS), generator=gen)  # distinct letters: the first k of a random permutation
    x = keys.argsort(dim=1)[:, :k] + FIRST  # (B, k)
    if how == "sort":
        y, where = x.sort(dim=1)  # where: the input index of each sorted letter, (B, k)
    else:
        y, where = x.flip(1), torch.arange(k - 1, -1, -1).expand(b, k)
    ids = torch.cat([torch.full((b, 1), BOS), x, torch.full((b, 1), SEP), y], dim=1)  # (B, 2k + 2)
    labels = torch.full_like(ids, IGNORE)
    labels[:, k + 1 : 2 * k + 1] = y  # the bar predicts y₁, y_t predicts y_{t+1}
    target = torch.full_like(ids, -1)
    target[:, k + 1 : 2 * k + 1] = where + 1  # + 1: past [BOS]
    return Batch(ids, labels, target)


@cache
def corpus_stream() -> tuple[torch.Tensor, object]:
    """The bundled held-out documents as one id stream, and the bundled tokenizer (read once per process)."""
    from model.io.tokenizer import BUNDLED_TOKENIZER, Tokenizer
    from model.train.corpus import held_out_records
    from model.train.masking import token_stream

    tok = Tokenizer.from_file(BUNDLED_TOKENIZER)
    return token_stream(tok, [r["text"] for r in held_out_records()]), tok


def masked(gen: torch.Generator, b: int, n: int, start: int = 0) -> Batch:
    """Windows [CLS] … [SEP] of n tokens from the corpus (the first 90 % of its stream for training, ``start`` =
    the split point for the probe), 15 % of the words masked as BERT does; target: the previous token."""
    from model.train.masking import mask_tokens, windows

    stream, tok = corpus_stream()
    split = int(len(stream) * 0.9)
    lo, hi = (0, split - n) if start == 0 else (split, len(stream) - n)
    starts = torch.randint(lo, hi, (b,), generator=gen)
    ids = windows(stream, starts, n, tok.token_id("[CLS]"), tok.token_id("[SEP]"))  # (B, N)
    inputs, labels = mask_tokens(ids, tok, gen, tok.special_ids())
    target = torch.full_like(ids, -1)
    target[:, 2:-1] = torch.arange(1, n - 2)
    return Batch(inputs, labels, target)


MONTHS = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")


def dates(gen: torch.Generator, b: int) -> Batch:
    """Source [BOS] d d m m m y y y y ("07mar1994", S = 10); decoder input [BOS] y y y y - m m - d d and labels the
    same shifted by one (T = 11); target: the source position each query copies its next character from (the
    month's first letter for the month's digits, -1 for the dashes and the end)."""
    day = torch.randint(1, 29, (b,), generator=gen)
    month = torch.randint(0, 12, (b,), generator=gen)
    year = torch.randint(1900, 2100, (b,), generator=gen)
    letter = {ch: i + FIRST for i, ch in enumerate(SYMBOLS)}
    src, out = [], []
    for d, m, y in zip(day.tolist(), month.tolist(), year.tolist(), strict=True):
        src.append([BOS] + [letter[c] for c in f"{d:02d}{MONTHS[m]}{y}"])
        out.append([BOS] + [letter[c] if c != "-" else DASH for c in f"{y}-{m + 1:02d}-{d:02d}"])
    source, full = torch.tensor(src), torch.tensor(out)  # (B, 10), (B, 11)
    ids, labels = full[:, :-1], full[:, 1:]  # (B, 10) each
    # each query writes labels[:, t]: the year's digits copy source 6..9, the month's read the name at 3, the day's
    # digits copy source 1..2; a dash comes from nowhere in the source
    aligned = torch.tensor([6, 7, 8, 9, -1, 3, 3, -1, 1, 2])
    return Batch(ids, labels, aligned.expand(b, -1).clone(), source)


def batch(task: str, gen: torch.Generator, b: int, step: int = 0, probe: bool = False) -> Batch:
    """One batch of ``task`` with its special tokens marked. Induction varies its period (8 … 24, the same for a
    whole batch); the probe batch uses the period 16."""
    data = _batch(task, gen, b, probe)
    if task == "mlm":
        specials = torch.tensor(sorted(corpus_stream()[1].special_ids()))
        return replace(data, special=torch.isin(data.ids, specials))
    return replace(data, special=data.ids < FIRST)


def _batch(task: str, gen: torch.Generator, b: int, probe: bool) -> Batch:
    if task == "induction":
        period = 16 if probe else 8 + int(torch.randint(0, 17, (1,), generator=gen))
        return induction(gen, b, period)
    if task == "previous":
        return previous(gen, b, TASKS["previous"].seq_len)
    if task in ("sort", "reverse"):
        return ordered(gen, b, (TASKS[task].seq_len - 2) // 2, task)
    if task == "dates":
        return dates(gen, b)
    if task == "mlm":
        return masked(gen, b, TASKS["mlm"].seq_len, start=1 if probe else 0)
    raise ValueError(f"unknown task {task!r}; choose one of {sorted(TASKS)}")


def head_scores(pattern: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """pattern (B, L, H, N, M) and target (B, N) -> (L, H): each head's mean weight from a scored query on the key
    the task needs (its score: 1 when every scored query looks only there). target (K, B, N), K scores at once
    (one gather over the pattern) -> (K, L, H)."""
    many = target.dim() == 3
    targets = target if many else target[None]  # (K, B, N)
    b, n_layers, n_heads, n = pattern.shape[:4]
    scored = (targets >= 0).permute(1, 2, 0).to(pattern.dtype)  # (B, N, K)
    key = targets.clamp(min=0).permute(1, 2, 0)[:, None, None]  # (B, 1, 1, N, K)
    on = pattern.gather(-1, key.expand(b, n_layers, n_heads, n, targets.size(0)))  # (B, L, H, N, K)
    total = (on * scored[:, None, None]).sum(dim=(0, 3))  # (L, H, K)
    scores = (total / scored.sum(dim=(0, 1)).clamp(min=1)).permute(2, 0, 1)  # (K, L, H)
    return scores if many else scores[0]
