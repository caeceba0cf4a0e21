"""Needle in a haystack: a short fact planted at a chosen depth of a long filler text, a question at the end, and which
heads fetch the answer from the needle (Kamradt's test; retrieval heads after Wu et al., 2024, "Retrieval Head
Mechanistically Explains Long-Context Factuality").

A run reads the haystack less its last token in one fused pass with a KV cache (memory linear in its length), then
decodes greedily, one token a step, from that last token: each step's query row is computed exactly, so for every
head its most-attended key is known. Wu et al.'s retrieval score: each time the model emits a token, a head whose
most-attended key lies in the answer's span of the needle and *is that token* copies it; the head scores
1 / (answer length) for it. Like them, a grid's score of a head is its mean over the runs that found the answer.

Shapes: L layers, H heads, N haystack tokens.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

import numpy as np
import torch

from model.attention import KVCache, softmax_with_sink
from model.capture import capture
from model.intervene import hooks
from model.transformer import Transformer

NEEDLE = " The best thing to do in San Francisco is eat a sandwich and sit in Dolores Park on a sunny day."
ANSWER = "eat a sandwich and sit in Dolores Park on a sunny day"  # the part of the needle a right answer repeats
QUESTION = (
    "\n\nQuestion: What is the best thing to do in San Francisco?\nAnswer: The best thing to do in San Francisco is"
)
SAMPLED_ROWS = 32  # query rows of the haystack whose weight on position 0 is measured (sinks as length grows)
ROOM = 32  # tokens a haystack leaves free in the model's context for the reply
FOUND = 0.5  # share of the answer's words a reply must repeat to count as found (Wu et al.: ROUGE-1 recall > 50)


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
    if budget < 1 or ordinary(filler) < budget:
        raise ValueError(f"a haystack of {length} tokens needs {max(budget, 1)} filler tokens")
    while True:
        hay = _assemble(tokenizer, filler, budget, extra, depth, needle, question, answer)
        if len(hay.ids) <= length or budget <= 1:
            return Haystack(hay.text, hay.ids, hay.needle, hay.answer, length, depth)
        budget -= len(hay.ids) - length


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


@dataclass(frozen=True)
class NeedleRun:
    """What one haystack showed. retrieval: (L, H) Wu et al.'s copy score of this run; needle_share, sink_share:
    (L, H) the answer position's weight on the needle sentence (position 0 left out: it is the sink) and on
    position 0; sink_rows: (L, H) the weight on
    position 0 averaged over SAMPLED_ROWS evenly spaced queries of the haystack."""

    length: int
    depth: float
    needle: tuple[int, int]
    generated: tuple[int, ...]
    recall: float  # share of the answer's words the reply repeats
    retrieval: np.ndarray
    needle_share: np.ndarray
    sink_share: np.ndarray
    sink_rows: np.ndarray

    @property
    def found(self) -> bool:
        return self.recall > FOUND


def words(text: str) -> list[str]:
    return re.findall(r"\w+", text.lower())


def needle_run(model: Transformer, tokenizer, hay: Haystack, answer: str = ANSWER, extra: int = 4) -> NeedleRun:
    """Read a haystack (one fused pass, KV cache) and decode greedily up to the answer's length + ``extra`` tokens
    (stopping at a new line or an end-of-text token), scoring every head at every step."""
    cfg = model.cfg
    if not (cfg.causal and cfg.lm_head):
        raise ValueError("the needle test needs a decoder with a next-token head")
    dev = next(model.parameters()).device
    n = len(hay.ids)
    rows = np.unique(np.linspace(1, n - 2, min(SAMPLED_ROWS, n - 2)).round().astype(int))
    queries: dict[int, torch.Tensor] = {}

    def keep(t: torch.Tensor, where) -> None:  # (1, H, N - 1, d_k): only the sampled rows are kept
        queries[where.layer] = t[0, :, torch.from_numpy(rows)].detach().float().cpu()

    cache = KVCache(cfg.n_layers)
    with torch.no_grad(), hooks(model, [(lambda name: name.endswith("attn.hook_q"), keep)]):
        model(torch.tensor([hay.ids[:-1]], device=dev), cache=cache, fused=True)
    factor = cfg.attn_scale or cfg.d_k**-0.5
    sink_rows = np.stack(
        [_first_key_share(queries[i], cache.layers[i][0], rows, factor, cfg, i, model) for i in range(cfg.n_layers)]
    )
    span = hay.answer
    retrieval = np.zeros((cfg.n_layers, cfg.n_heads))
    generated: list[int] = []
    first = None
    token, limit = hay.ids[-1], min(len(words(answer)) * 2 + extra, cfg.max_seq_len - n + 1)
    stop = {i for i in (tokenizer.token_id(t) for t in ("<|im_end|>", "<|endoftext|>", "</s>")) if i is not None}
    with torch.no_grad():
        for _ in range(limit):
            with capture(model, kinds=["pattern"]) as trace:
                hidden = model(torch.tensor([[token]], device=dev), cache=cache)
            row = torch.stack([trace.get("pattern", i)[0, :, -1] for i in range(cfg.n_layers)]).float().cpu()
            # row: (L, H, M), the newest query's weights
            first = row if first is None else first
            token = int(model.lm_logits(hidden[:, -1:])[0, 0].argmax())
            retrieval += copies(row.argmax(-1).numpy(), hay.ids, span, token) / (span[1] - span[0])
            generated.append(token)
            if token in stop or "↵" in (tokenizer.id_to_token(token) or ""):  # labels show a new line as ↵
                break
    reply = words("".join(tokenizer.id_to_token(t) or "" for t in generated))
    wanted = words(answer)
    recall = sum(w in reply for w in wanted) / len(wanted)
    a, b = max(hay.needle[0], 1), hay.needle[1]  # position 0 is the sink, even when the needle starts there
    return NeedleRun(
        hay.length, hay.depth, hay.needle, tuple(generated), recall, retrieval.astype(np.float32),
        first[..., a:b].sum(-1).numpy(), first[..., 0].numpy(), sink_rows.astype(np.float32),
    )  # fmt: skip


def copies(top: np.ndarray, ids: Sequence[int], span: tuple[int, int], token: int) -> np.ndarray:
    """(L, H) bool: heads whose most-attended position ``top`` (L, H) lies in the answer's ``span`` and holds the
    token just emitted (Wu et al.'s retrieval_calculate with top-1)."""
    inside = (top >= span[0]) & (top < span[1])
    return inside & (np.asarray(ids)[np.clip(top, 0, len(ids) - 1)] == token)


def _first_key_share(
    q: torch.Tensor, k: torch.Tensor, rows: np.ndarray, factor: float, cfg, layer: int, model: Transformer
) -> np.ndarray:
    """(H,) mean weight on position 0 of the sampled query rows (q (H, R, d_k)) that can see it, over the keys each
    may see: the layer's sliding window and a learned sink (gpt-oss) taken as the model takes them, and rows a
    window keeps from position 0 left out (as model.analysis.sinks.sink_shares)."""
    k = k[0].float().cpu()  # (H_kv, M, d_k)
    k = k.repeat_interleave(cfg.n_heads // k.shape[0], dim=0)  # (H, M, d_k)
    s = torch.einsum("hrd,hmd->hrm", q, k) * factor  # (H, R, M)
    if cfg.attn_softcap:
        s = torch.tanh(s / cfg.attn_softcap) * cfg.attn_softcap
    keys, at = torch.arange(k.shape[1])[None, :], torch.from_numpy(rows)[:, None]  # (1, M), (R, 1)
    blocked = keys > at  # (R, M)
    if cfg.is_sliding(layer):
        blocked |= keys <= at - cfg.sliding_window
    s.masked_fill_(blocked[None], float("-inf"))
    sinks = model.blocks[layer].attn.sinks  # (H,) gpt-oss's learned logits, or None
    if sinks is None:
        weights = torch.softmax(s, -1)  # (H, R, M)
    else:
        weights = softmax_with_sink(s[None], sinks.detach().float().cpu())[0, ..., :-1]  # the sink's column dropped
    sees = ~blocked[:, 0]  # (R,): the rows that can see position 0
    return weights[:, sees, 0].mean(-1).numpy() if bool(sees.any()) else np.zeros(q.shape[0], dtype=np.float32)


@dataclass(frozen=True)
class NeedleGrid:
    """Runs over lengths × depths. scores(): (L, H) mean retrieval score over the runs that found the answer."""

    runs: tuple[NeedleRun, ...]
    lengths: tuple[int, ...]
    depths: tuple[float, ...]

    def run(self, length: int, depth: float) -> NeedleRun:
        return next(r for r in self.runs if r.length == length and r.depth == depth)

    def scores(self) -> np.ndarray:
        found = [r.retrieval for r in self.runs if r.found]
        return np.mean(found, axis=0) if found else np.full(self.runs[0].retrieval.shape, np.nan, dtype=np.float32)

    def table(self, value: Callable[[NeedleRun], float]) -> np.ndarray:
        """(depths, lengths) of ``value(run)``."""
        return np.array([[value(self.run(n, d)) for n in self.lengths] for d in self.depths], dtype=np.float64)


def needle_grid(
    model: Transformer,
    tokenizer,
    filler: str,
    lengths: Sequence[int],
    depths: Sequence[float],
    progress: Callable[[int, int], None] | None = None,
    cancel: Callable[[], bool] | None = None,
) -> NeedleGrid:
    """Every (length, depth) run; ``progress(done, total)`` after each, ``cancel()`` true stops between runs."""
    from model.long import Cancelled  # the one cancellation the background jobs know

    runs, total = [], len(lengths) * len(depths)
    for length in lengths:
        for depth in depths:
            if cancel is not None and cancel():
                raise Cancelled
            hay = haystack(tokenizer, filler, min(length, model.cfg.max_seq_len - ROOM), depth)
            runs.append(needle_run(model, tokenizer, replace(hay, length=length)))  # kept under its nominal length
            if progress is not None:
                progress(len(runs), total)
    return NeedleGrid(tuple(runs), tuple(lengths), tuple(depths))


def filler_text() -> str:
    """The haystack's filler: the bundled held-out documents (assets/corpus), tens of thousands of tokens."""
    from model.profile.corpus import bundled_documents

    return "\n\n".join(bundled_documents())


def seconds(lengths: Sequence[int], depths: Sequence[float], at_512: float) -> float:
    """A grid's time from one fused pass of 512 tokens here: a run's pass grows a little faster than its length
    and costs half as much again as the bare pass (the q hooks, a cache), plus about 1.5 s of decoding steps
    (measured on SmolLM2, 2 cores: 15 runs of 512, 1,024 and 2,048 tokens in 71 s, the bare pass 0.9 s)."""
    return sum(1.5 * at_512 * n / 512 * (1 + n / 16_384) + 1.5 for n in lengths) * len(depths)
