"""The long-context lesson: needle-in-a-haystack runs over lengths × depths, the heads that fetch the answer from
the needle (Wu et al.'s retrieval score), and attention sinks as the length grows; captions from the numbers drawn."""

from __future__ import annotations

import numpy as np

from model.analysis.needle import ANSWER, FOUND, NeedleGrid
from viz.figures.common import Theme, with_subtitle
from viz.figures.decoder import head_scores
from viz.figures.needle import length_lines, needle_map
from viz.figures.text import pct
from viz.views.base import Captioned, Source, ViewUnavailableError, view

RETRIEVAL = 0.1  # Wu et al. call a head with a retrieval score above 0.1 a retrieval head
SHOWN_SINKS = 4  # sink heads drawn as lines


def head(i: int, heads: int) -> str:
    return f"L{i // heads}H{i % heads}"


def reply(src: Source, run) -> str:
    tok = src.loaded.tokenizer
    return "".join(tok.id_to_token(t) or "" for t in run.generated).strip()


def grid_caption(grid: NeedleGrid, heads: int) -> str:
    found = [r for r in grid.runs if r.found]
    missed = [f"{r.length:,} tokens at {r.depth:.0%}" for r in grid.runs if not r.found]
    best = [float(r.needle_share.max()) for r in grid.runs]
    text = f"The model repeats the answer (“{ANSWER}”) in {len(found)} of {len(grid.runs)} haystacks"
    text += f" (missed: {', '.join(missed)})" if missed else ""
    strongest = max(grid.runs, key=lambda r: float(r.needle_share.max()))
    where = head(int(strongest.needle_share.argmax()), heads)
    return (
        text + f". From the answer position, the head most on the needle puts between {pct(min(best))} and "
        f"{pct(max(best))} of its attention on the needle's tokens; the most: {where} at {strongest.length:,} tokens, "
        f"needle at {strongest.depth:.0%} ({pct(max(best))})."
    )


def heads_caption(scores: np.ndarray, grid: NeedleGrid) -> str:
    flat = np.nan_to_num(scores).ravel()
    heads = scores.shape[1]
    found = sum(r.found for r in grid.runs)
    if not found:
        return "The model found the answer in no haystack, so no head has a retrieval score (it counts found runs)."
    order = np.argsort(-flat, kind="stable")
    strong = [i for i in order if flat[i] >= RETRIEVAL]
    named = ", ".join(f"{head(i, heads)} {pct(flat[i])}" for i in (strong or order[:1])[:5])
    return (
        f"{len(strong)} of {flat.size} heads are retrieval heads here (score ≥ {RETRIEVAL}, Wu et al.): at each "
        f"generated token their most-attended key is that very token in the needle. Share of the answer's tokens "
        f"each copies, over the {found} haystacks where the reply was right: {named}."
    )


def sinks_caption(lengths, mean: list[float], top: dict[str, list[float]]) -> str:
    first, last = mean[0], mean[-1]
    trend = "rises" if last > first + 0.02 else "falls" if last < first - 0.02 else "barely moves"
    text = (
        f"From {lengths[0]:,} to {lengths[-1]:,} tokens the heads' mean weight on position 0 {trend}: {pct(first)} "
        f"→ {pct(last)} (queries sampled evenly along each haystack)."
    )
    if top:
        name, values = next(iter(top.items()))
        text += f" The strongest sink, {name}, holds {pct(min(values))}–{pct(max(values))} at every length."
    return text


@view("lesson.needle", page="lessons")
def lesson_needle(src: Source, theme: Theme, *, lengths: tuple[int, ...] = (512, 1024, 2048),
                  depths: tuple[int, ...] = (0, 25, 50, 75, 100)):  # fmt: skip
    """Runs of the needle test on every length × depth (percent); parts: the map, the retrieval heads, sinks."""
    cfg = src.loaded.model.cfg
    if not (cfg.causal and cfg.lm_head):
        raise ViewUnavailableError(
            "The needle test asks a decoder a question about a long text: load SmolLM2 (or another decoder with a "
            "next-token head)."
        )
    fits = tuple(n for n in lengths if n <= cfg.max_seq_len)
    if not fits or not depths:
        raise ViewUnavailableError(f"Pick a haystack length of at most {cfg.max_seq_len:,} tokens and a depth.")
    grid = src.needle(fits, tuple(depths))
    H = cfg.n_heads
    values = grid.table(lambda r: float(r.needle_share.max()))
    hover = [
        [
            f"reply: {reply(src, r)[:60]}<br>answer words repeated: {pct(r.recall)} (found ≥ {FOUND:.0%})<br>"
            f"head most on the needle: {head(int(r.needle_share.argmax()), H)}"
            for r in (grid.run(n, d) for n in grid.lengths)
        ]
        for d in grid.depths
    ]
    subtitle = f"{src.loaded.name} · needle: “{ANSWER}” in the bundled held-out documents"
    fig = needle_map(
        values, [f"{d:.0%}" for d in grid.depths], [f"{n:,}" for n in grid.lengths], grid.table(lambda r: r.found),
        title="Needle in a haystack: the strongest head's share on the needle",
        value_name="on the needle", hover=hover, theme=theme,
    )  # fmt: skip
    scores = grid.scores()
    heads = head_scores(np.nan_to_num(scores), title="Retrieval heads: share of the answer each copies from the needle",
                        value_name="retrieval score", threshold=RETRIEVAL, theme=theme)  # fmt: skip
    rows = np.stack([np.mean([grid.run(n, d).sink_rows for d in grid.depths], axis=0) for n in grid.lengths])
    mean = [float(r.mean()) for r in rows]  # (lengths,) over every head
    order = np.argsort(-rows.mean(0).ravel(), kind="stable")[:SHOWN_SINKS]
    top = {head(int(i), H): [float(r.ravel()[i]) for r in rows] for i in order}
    sinks = length_lines(list(grid.lengths), {**top, "mean of every head": mean}, y_title="weight on pos. 0",
                         title="Attention sinks as the haystack grows", theme=theme)  # fmt: skip
    return {
        "map": Captioned(with_subtitle(fig, subtitle, theme), grid_caption(grid, H)),
        "heads": Captioned(with_subtitle(heads, subtitle, theme), heads_caption(scores, grid)),
        "sinks": Captioned(with_subtitle(sinks, subtitle, theme), sinks_caption(grid.lengths, mean, top)),
    }
