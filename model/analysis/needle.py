"""Needle in a haystack: a short fact planted at a chosen depth of a long filler text, a question at the end, and which
heads fetch the answer from the needle (Kamradt's test; retrieval heads after Wu et al., 2024, "Retrieval Head
Mechanistically Explains Long-Context Factuality").

A run reads the haystack less its last token in one fused pass with a KV cache (memory linear in its length), then
decodes greedily, one token a step, from that last token: each step's query row is computed exactly, so for every
head its most-attended key is known. Wu et al.'s retrieval score: each time the model emits a token, a head whose
most-attended key lies in the answer's span of the needle and *is that token* copies it; the head scores
1 / (answer length) for it. Like them, a grid's score of a head is its mean over the runs that found the answer. A
grid reads what its haystacks share at their beginning once (``Prefix``: the filler before the needles, the needle at
depth 0), which halves what a grid of several lengths and depths reads.

Shapes: L layers, H heads, N haystack tokens. The haystacks themselves: model/analysis/haystack.py.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

import numpy as np
import torch

from model.analysis.haystack import ANSWER, NEEDLE, QUESTION, Haystack, filler_text, haystack
from model.attention import KVCache, softmax_with_sink
from model.capture import capture
from model.intervene import hooks
from model.transformer import Transformer

__all__ = [  # the haystack's names too, which the lesson's pages and the tests import from here
    "ANSWER",
    "FOUND",
    "NEEDLE",
    "QUESTION",
    "Haystack",
    "NeedleGrid",
    "NeedleRun",
    "Prefix",
    "copies",
    "filler_text",
    "haystack",
    "needle_grid",
    "needle_run",
    "sampled_rows",
    "seconds",
    "shared_starts",
    "words",
]

SAMPLED_ROWS = 32  # query rows of the haystack whose weight on position 0 is measured (sinks as length grows)
ROOM = 32  # tokens a haystack leaves free in the model's context for the reply
FOUND = 0.5  # share of the answer's words a reply must repeat to count as found (Wu et al.: ROUGE-1 recall > 50)


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


class Prefix:
    """The KV cache of the prompt read last, kept for the next run (a prefix cache, as serving engines keep one):
    haystacks that begin alike (the same filler before their needles, or the same needle at depth 0) read only what
    follows their common beginning. Keys and values at a position depend only on the tokens up to it in a causal
    model, so the kept positions are the ones a fresh pass computes (up to the kernel's float rounding). ``queries``:
    the query rows (L, H, d_k) kept by position for the sink rows of later runs."""

    def __init__(self, n_layers: int) -> None:
        self.cache = KVCache(n_layers)
        self.ids: tuple[int, ...] = ()  # the prompt the cache holds (decoded tokens after it are dropped)
        self.queries: dict[int, torch.Tensor] = {}

    def common(self, ids: Sequence[int]) -> int:
        """Positions ``ids`` shares with the prompt held."""
        return _common(self.ids, ids)


def needle_run(model: Transformer, tokenizer, hay: Haystack, answer: str = ANSWER, extra: int = 4,
               prefix: Prefix | None = None, keep: Sequence[int] = ()) -> NeedleRun:  # fmt: skip
    """Read a haystack (one fused pass, KV cache) and decode greedily up to the answer's length + ``extra`` tokens
    (stopping at a new line or an end-of-text token), scoring every head at every step.

    ``prefix``: the cache of the prompt read before; only the positions after what this prompt shares with it are
    read, and the cache then holds this prompt. ``keep``: query positions a later run will ask ``prefix`` for."""
    cfg = model.cfg
    if not (cfg.causal and cfg.lm_head):
        raise ValueError("the needle test needs a decoder with a next-token head")
    dev = next(model.parameters()).device
    n = len(hay.ids)
    rows = sampled_rows(n)
    prompt = hay.ids[:-1]
    prefix = Prefix(cfg.n_layers) if prefix is None else prefix
    start = prefix.common(prompt)
    prefix.cache.truncate(start)
    wanted = sorted({int(r) for r in (*rows, *keep) if start <= r < n - 1})
    caught: dict[int, torch.Tensor] = {}

    def catch(t: torch.Tensor, where) -> None:  # (1, H, N - 1 - start, d_k): only the wanted rows are kept
        caught[where.layer] = t[0, :, torch.tensor(wanted, dtype=torch.long) - start].detach().float().cpu()

    if start < len(prompt):
        with torch.no_grad(), hooks(model, [(lambda name: name.endswith("attn.hook_q"), catch)]):
            model(torch.tensor([prompt[start:]], device=dev), cache=prefix.cache, fused=True)
    prefix.queries = {p: q for p, q in prefix.queries.items() if p < start}  # later positions now differ
    for j, p in enumerate(wanted):
        prefix.queries[p] = torch.stack([caught[i][:, j] for i in range(cfg.n_layers)])  # (L, H, d_k)
    prefix.ids = tuple(prompt)
    queries = {i: torch.stack([prefix.queries[int(r)][i] for r in rows], dim=1) for i in range(cfg.n_layers)}
    # queries: (H, R, d_k) per layer
    cache = prefix.cache
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


def _common(a: Sequence[int], b: Sequence[int]) -> int:
    return next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))


def shared_starts(prompts: Sequence[Sequence[int]]) -> list[int]:
    """For prompts in the order they are read, the positions each shares with the one read before it (0 for the
    first): where each run's reading starts."""
    return [_common(a, b) for a, b in zip([(), *prompts[:-1]], prompts)]


def sampled_rows(n: int) -> np.ndarray:
    """The SAMPLED_ROWS query positions of a haystack of n tokens whose weight on position 0 is measured."""
    return np.unique(np.linspace(1, n - 2, min(SAMPLED_ROWS, n - 2)).round().astype(int))


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

    limit = model.cfg.max_seq_len - ROOM
    plan = [(n, d) for n in lengths for d in depths]
    hays = [replace(haystack(tokenizer, filler, min(n, limit), d), length=n) for n, d in plan]  # under its nominal
    # length; read in the prompts' sorted order, each run's prompt shares the most with the one read before it
    order = sorted(range(len(hays)), key=lambda i: hays[i].ids[:-1])
    prompts = [hays[i].ids[:-1] for i in order]
    starts = shared_starts(prompts)
    prefix, runs = Prefix(model.cfg.n_layers), [None] * len(hays)
    for done, i in enumerate(order):
        if cancel is not None and cancel():
            raise Cancelled
        keep, common = [], len(prompts[done])
        for k in range(done + 1, len(order)):  # sorted: what run k shares with this one is the least shared between
            common = min(common, starts[k])
            keep += [r for r in sampled_rows(len(hays[order[k]].ids)) if r < common]
        runs[i] = needle_run(model, tokenizer, hays[i], prefix=prefix, keep=keep)
        if progress is not None:
            progress(done + 1, len(hays))
    return NeedleGrid(tuple(runs), tuple(lengths), tuple(depths))


def seconds(lengths: Sequence[int], depths: Sequence[float], at_512: float) -> float:
    """A grid's time from one fused pass of 512 tokens here: reading n positions after s shared ones costs in
    proportion to (n − s) + (n² − s²) / 16,384 (a pass grows a little faster than its length), half as much again as
    the bare pass (the q hooks, a cache), plus about 1.5 s of decoding steps a run (measured on SmolLM2, 2 cores: 15
    runs of 512, 1,024 and 2,048 tokens in 71 s, the bare pass 0.9 s). The shared beginnings are those of the
    prompts laid out as needle_grid reads them: filler positions, the needle's and the question's tokens (their
    lengths about SmolLM2's; sentence breaks aside)."""
    needle, question = tuple(range(-24, 0)), tuple(range(-100, -60))  # stand-ins for their tokens
    prompts = []
    for n in lengths:
        b = max(n - len(needle) - len(question), 1)  # filler positions
        prompts += [(*range(round(b * d)), *needle, *range(round(b * d), b), *question) for d in depths]
    total, per = 0.0, 1.5 * at_512 / 512
    prompts = sorted(prompts)
    for p, s in zip(prompts, shared_starts(prompts)):
        n = len(p)
        total += per * ((n - s) + (n * n - s * s) / 16_384) + 1.5
    return total
