"""Activation patching in the app: a clean prompt (the text), a corrupted one of the same length, and how much of the
clean answer each clean activation brings back into the corrupted run. Captions are computed from the grids."""

from __future__ import annotations

import numpy as np

from model.analysis.patching import PATCH_KINDS, POSITION_KINDS, Metric, Patching, top_guesses
from viz.figures.causes import signed_grid
from viz.figures.common import Theme, with_subtitle
from viz.figures.text import token_labels
from viz.views.attention import subtitle
from viz.views.base import Captioned, Source, ViewUnavailableError, view
from viz.views.captions import quoted
from viz.views.causes import answer_and_foil, answer_position, signed_parts, token_text

KIND_TITLES = {
    "resid_pre": "the residual stream entering each layer",
    "attn_out": "each layer's attention output",
    "mlp_out": "each layer's feed-forward output",
    "z": "each head's output (at every position)",
}


def corrupted_ids(src: Source, corrupted: str) -> list[int]:
    if not corrupted.strip():
        raise ViewUnavailableError("Type a corrupted prompt (or pick a template): the same length, the answer changed.")
    tok = src.loaded.tokenizer
    ids = list(tok.encode(corrupted, max_len=src.loaded.model.cfg.max_seq_len).ids)
    clean = list(src.obs.ids)
    if len(ids) != len(clean):
        raise ViewUnavailableError(
            f"The clean prompt has {len(clean)} tokens and the corrupted one {len(ids)}: patching compares position "
            "with position, so they must have the same length. Change words for words of one token each "
            "(the token strip under the prompts shows where they part)."
        )
    if ids == clean:
        raise ViewUnavailableError("The corrupted prompt is the clean one: change the word the answer depends on.")
    return ids


SCORES = ("logit difference", "probability")


def patch_metric(
    src: Source, corrupted: str, answer: str, foil: str, score: str = SCORES[0]
) -> tuple[list[int], Metric]:
    """The corrupted prompt's ids and the metric: typed answer and foil, else the clean run's top guess against
    the corrupted run's (IOI: “ Mary” against “ John”); ``score`` "probability": the answer's probability."""
    if score not in SCORES:
        raise ViewUnavailableError(f"score the runs by {' or '.join(SCORES)}")
    ids = corrupted_ids(src, corrupted)
    pos = answer_position(src)
    corrupted_top = None if answer else top_guesses(src.loaded.model, ids, pos, 1)[0]
    target, other = answer_and_foil(src, answer, foil, pos, corrupted_top)
    return ids, Metric(target, other if score == SCORES[0] else None, pos)


def runs_of(best: np.ndarray, labels: list[str], values: np.ndarray) -> str:
    """Consecutive layers whose best-recovering position is the same, as "layers 0–20: “ John”·9 (1.00)"."""
    parts, start = [], 0
    for i in range(1, len(best) + 1):
        if i == len(best) or best[i] != best[start]:
            span = f"layer {start}" if i - 1 == start else f"layers {start}–{i - 1}"
            mean = float(np.mean(values[start:i]))
            parts.append(f"{span}: {quoted(labels[best[start]])} ({mean:.2f})")
            start = i
    return "; ".join(parts)


@view("causes.patching", page="causes")
def patching_view(
    src: Source,
    theme: Theme,
    *,
    corrupted: str = "",
    answer: str = "",
    foil: str = "",
    kinds: tuple = PATCH_KINDS,
    score: str = SCORES[0],
):
    """Activation patching: how much of the clean answer each clean activation brings back into the corrupted run."""
    ids, metric = patch_metric(src, corrupted, answer, foil, score)
    result = src.patching(tuple(ids), metric, tuple(kinds))
    lead = (
        "Each cell: the corrupted run with that one activation taken from the clean run; 1 brings the clean "
        "answer back, 0 does nothing"
    )
    return patching_figures(src, theme, result, ids, kinds, lead=lead, title="Patching")


def patching_figures(
    src: Source, theme: Theme, result: Patching, ids: list[int], kinds, *, lead: str, title: str, heads: str = ""
) -> dict[str, Captioned]:
    """One grid per kind of a sweep (activation, attribution or path patching), each with its computed caption.
    ``lead`` says what a cell is; the gap between the clean and corrupted runs and the strongest cells follow.
    ``heads``: the head grid's title instead of "{title} each head's output (at every position)"."""
    metric = result.metric
    clean = list(src.obs.ids)
    changed = [i for i, (a, b) in enumerate(zip(clean, ids, strict=True)) if a != b]
    tokens = [f"{t}*" if i in changed else t for i, t in enumerate(src.obs.tokens)]
    labels = token_labels(tokens, theme.positions)
    what = quoted(token_text(src, metric.answer)) + (
        f" − {quoted(token_text(src, metric.foil))}" if metric.foil is not None else ""
    )
    gap = f"{metric.name} {what}: clean {result.clean:.2f}, corrupted {result.corrupted:.2f}"
    if abs(result.clean - result.corrupted) < 1e-6:
        raise ViewUnavailableError(
            f"Both prompts give the same {gap.split(':')[0]} ({result.clean:.2f}): there is nothing to recover. "
            "Change the corrupted prompt so that the answer changes."
        )
    out = {}
    L = src.loaded.model.cfg.n_layers
    rows = [f"L{i}" for i in range(L)]
    for kind in kinds:
        rec = result.recovered(kind)
        if kind in POSITION_KINDS:
            fig = signed_grid(
                rec,
                rows,
                labels,
                title=f"{title} {KIND_TITLES[kind]}",
                value_name="recovered",
                zmax=1.0,
                where="layer %{y}, position %{x}",
                x_title="position (* = changed)",
                y_title="layer",
                theme=theme,
            )
            best = np.argmax(rec, axis=1)
            caption = f"{lead} ({gap}). The best position per layer — {runs_of(best, labels, rec[np.arange(L), best])}."
        else:
            H = rec.shape[1]
            ids_grid = np.stack(np.meshgrid(np.arange(L), np.arange(H), indexing="ij"), axis=-1)  # (L, H, 2)
            fig = signed_grid(
                rec,
                rows,
                [f"H{h}" for h in range(H)],
                title=heads or f"{title} {KIND_TITLES[kind]}",
                value_name="recovered",
                zmax=1.0,
                cell_ids=ids_grid,
                where="layer %{y}, head %{x}",
                x_title="head",
                y_title="layer",
                theme=theme,
            )
            names = [f"L{i}H{h}" for i in range(L) for h in range(H)]
            flat = rec.ravel()
            live = ~np.isnan(flat)
            up, down = signed_parts(flat[live], [n for n, ok in zip(names, live, strict=True) if ok])
            caption = (
                f"{lead} ({gap}). Alone, these bring the most back: {up}; these push the other way: {down}. "
                "Click a head to open it."
            )
        out[kind] = Captioned(with_subtitle(fig, subtitle(src), theme), caption)
    return out


#: name -> (clean, corrupted, answer, foil); "{end}" is where a decoder predicts, or where an encoder's [MASK] goes
TEMPLATES = {
    "Names (indirect object, Wang et al., 2022)": (
        "When Mary and John went to the store, John gave a drink to{end}",
        "When Mary and John went to the store, Mary gave a drink to{end}",
        " Mary",
        " John",
    ),
    "Capital of": ("The capital of France is{end}", "The capital of Italy is{end}", " Paris", " Rome"),
}


def template(name: str, mask: str | None) -> tuple[str, str, str, str]:
    """A template's prompts for this model: as they are for a decoder, with “ [MASK].” at the end for an encoder
    (whose answers are then lower-case words without the leading space)."""
    clean, corrupted, answer, foil = TEMPLATES[name]
    end = f" {mask}." if mask else ""
    if mask:
        answer, foil = answer.strip().lower(), foil.strip().lower()
    return clean.format(end=end), corrupted.format(end=end), answer, foil


def alignment(clean: list[str], corrupted: list[str]) -> str:
    """Where two tokenised prompts part, in one sentence."""
    if len(clean) != len(corrupted):
        first = next((i for i, (a, b) in enumerate(zip(clean, corrupted)) if a != b), min(len(clean), len(corrupted)))
        return (
            f"The clean prompt has {len(clean)} tokens and the corrupted one {len(corrupted)}; they part at position "
            f"{first}. Patching needs the same length: swap words for words of one token each."
        )
    changed = [f"{i}: {quoted(a)} → {quoted(b)}" for i, (a, b) in enumerate(zip(clean, corrupted)) if a != b]
    if not changed:
        return "The two prompts are the same: change the word the answer depends on."
    return f"{len(clean)} tokens each; they differ at position {', '.join(changed)}."
