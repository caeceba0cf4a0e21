"""Views for decoders: next-token predictions, generation step by step, attention sinks, induction heads and
grouped K/V heads. Every caption is computed from the numbers its figure draws."""

from __future__ import annotations

import numpy as np

from model.analysis.decoder import SINK_THRESHOLD, group_distances, sink_mass
from model.analysis.sinks import without_keys
from model.generate import predictions_from_hidden
from viz.figures import heatmap_panels, prediction_bars, ranked_heads
from viz.figures.common import Theme, with_subtitle
from viz.figures.decoder import generation_map, group_distance_lines, head_scores
from viz.figures.text import apart, pct
from viz.views import long as long_views
from viz.views.attention import subtitle
from viz.views.base import Captioned, Source, ViewUnavailableError, view
from viz.views.captions import quoted

SHOWN_POSITIONS = 120  # generation map: earlier positions are summed into one column
INDUCTION_THRESHOLD = 0.4


def _need_lm(src: Source) -> None:
    if not src.loaded.has_lm:
        raise ViewUnavailableError(
            f"{src.loaded.name} has no next-token head. Choose SmolLM2-135M-Instruct as the model source: "
            "it is a decoder that predicts the next token."
        )


def top_heads(scores: np.ndarray, k: int) -> list[tuple[int, int]]:
    order = np.argsort(-scores, axis=None, kind="stable")[:k]
    return [(int(i // scores.shape[1]), int(i % scores.shape[1])) for i in order]


def heads_text(scores: np.ndarray, heads: list[tuple[int, int]]) -> str:
    return ", ".join(f"L{lay}H{hd} ({scores[lay, hd]:.2f})" for lay, hd in heads)


@view("next.predictions", page="next-token")
def next_predictions(src: Source, theme: Theme, *, position: int = -1, temperature: float = 1.0):
    """The ten most likely next tokens after one position of the text."""
    _need_lm(src)
    text = src.long or src.obs  # a text read whole: after any of its positions, from its final hidden states
    n = len(text.tokens)
    position = n - 1 if position < 0 else min(position, n - 1)
    if src.long is not None:  # one position's logits, not the whole text's (8,192 × 49,152 would be 1.6 GB)
        ids = predictions_from_hidden(src.loaded.model, src.long.hidden[position : position + 1], temperature)[0]
        top = [(src.loaded.tokenizer.id_to_token(i), p) for i, p in ids]
    else:
        top = src.next_tokens(temperature)[position]
    tokens, probs = [t for t, _ in top], [p for _, p in top]
    context = "".join(text.tokens[max(0, position - 6) : position + 1])
    fig = prediction_bars(tokens, probs, title=f"What comes after “…{context}”", theme=theme)
    truth = text.tokens[position + 1] if position + 1 < n else None
    caption = (
        f"At temperature {temperature:g}, the model gives {quoted(tokens[0])} {pct(probs[0])} after position "
        f"{position:,}; the ten shown hold {pct(sum(probs))} of the probability."
    )
    if truth is not None:
        rank = tokens.index(truth) + 1 if truth in tokens else None
        caption += f" The text continues with {quoted(truth)}: " + (
            f"its guess number {rank}." if rank else "not among its ten guesses."
        )
    return Captioned(with_subtitle(fig, f"temperature {temperature:g} · " + subtitle(src), theme), caption)


@view("next.generation", page="next-token")
def next_generation(
    src: Source,
    theme: Theme,
    *,
    n_new: int = 12,
    temperature: float = 0.0,
    seed: int = 0,
    layer: int = 0,
    head: int = 0,
):
    """Generate ``n_new`` tokens with the KV cache; each row is where the query that produced a token looked."""
    _need_lm(src)
    try:
        steps = src.generation(n_new, temperature, seed)
    except ValueError as exc:  # the prompt fills the context (model.generate says how long each is)
        raise ViewUnavailableError(f"Nothing can be generated: {exc}.") from None
    if not steps:
        raise ViewUnavailableError("The text already fills the model's context: nothing can be generated.")
    tok = src.loaded.tokenizer
    prompt = list((src.long or src.obs).tokens)  # a text read whole is continued whole
    new = [tok.id_to_token(s.token) for s in steps]
    positions = prompt + new[:-1]  # the last token produced is never attended to
    S, M = len(steps), len(positions)
    rows = np.full((S, M), np.nan, dtype=np.float32)
    for i, step in enumerate(steps):
        row = step.rows[layer, head]  # (len(prompt) + i,)
        rows[i, : len(row)] = row
    first = max(0, M - SHOWN_POSITIONS)
    if first:  # sum the earliest positions into one column so long prompts stay readable
        rows = np.concatenate([np.nansum(rows[:, : first + 1], axis=1, keepdims=True), rows[:, first + 1 :]], axis=1)
        positions = [f"…{first + 1} earlier", *positions[first + 1 :]]
    fig = generation_map(
        rows,
        [f"{t}·{len(prompt) + i}" for i, t in enumerate(new)],  # the position each new token takes
        positions,
        max(1, len(prompt) - first),
        earlier=first + 1 if first else 0,
        title=f"Generating {S} tokens: where layer {layer}, head {head} looked for each",
        theme=theme,
    )
    last = steps[-1].rows[layer, head]
    where = int(np.argmax(last))
    label = (prompt + new)[where]
    mode = "greedy (temperature 0)" if temperature == 0 else f"sampled at temperature {temperature:g}, seed {seed}"
    caption = (
        f"{S} tokens, {mode}: “{''.join(new)}”. Each row is the attention of the query that produced that token, "
        f"computed with the KV cache (earlier keys and values are reused, not recomputed). To produce "
        f"{quoted(new[-1])}, this head put {pct(last[where])} of its weight on {quoted(label)} at position {where}."
    )
    return Captioned(with_subtitle(fig, subtitle(src), theme), caption)


@view("lesson.sinks", page="lessons")
def lesson_sinks(src: Source, theme: Theme, *, layer: int = 0, head: int = 0):
    """Every head's weight on position 0, and one head with that weight taken away (a text read whole: over all
    its tokens)."""
    if src.long is not None:
        return long_views.sinks(src, theme, layer, head, subtitle(src), SINK_THRESHOLD)
    obs = src.obs
    if obs.n_tokens < 3:
        raise ViewUnavailableError("Type a longer text: a sink needs queries after position 0.")
    mass = sink_mass(obs.patterns)
    first = obs.tokens[0]
    grid = head_scores(
        mass,
        title=f"Weight on position 0 ({quoted(first)}), mean over the later queries that see it",
        value_name="weight on pos. 0",
        threshold=SINK_THRESHOLD,
        theme=theme,
    )
    sinks = int((mass >= SINK_THRESHOLD).sum())  # as the dots and the sinks section count them
    strongest = top_heads(mass, 3)
    grid_caption = (
        f"{sinks} of {mass.size} heads put at least {pct(SINK_THRESHOLD)} of their weight on position 0 "
        f"({quoted(first)}; dots mark them); the strongest: {heads_text(mass, strongest)}. Click a cell to open it."
    )
    pattern = obs.patterns[layer, head]
    renorm = without_keys(pattern, np.arange(pattern.shape[-1]) == 0)
    panels = heatmap_panels(
        [
            (pattern, obs.tokens, obs.tokens, "as computed"),
            (renorm, obs.tokens, obs.tokens, "position 0 taken away, each row rescaled to sum to 1"),
        ],
        title=f"Layer {layer}, head {head} with and without its sink",
        theme=theme,
        shared_rows=True,
    )
    rest = pattern[1:, 1:].sum(-1)
    given = float(obs.sink[layer, head, 1:].mean()) if obs.sink is not None else 0.0  # a learned sink's share
    left = 1 - mass[layer, head] - given
    also = f" (and {pct(given)} to its learned sink, which no panel draws)" if obs.sink is not None else ""
    panel_caption = (
        f"This head puts {pct(mass[layer, head])} of its weight on position 0{also}. Taking that away and rescaling "
        f"shows where the other {pct(left)} goes; the rescaling magnifies rows whose rest was small (least rest: "
        f"{pct(rest.min(), 1)} of a row). "
        + (
            "So little is left that the right panel blows up a remainder the model barely uses: read it as where "
            "this head would look if it had to, not where it looks. "
            if left < 0.02
            else ""
        )
        + "This is a view, not the model: the model itself attends as on the left."
    )
    out = {
        "grid": Captioned(with_subtitle(grid, subtitle(src), theme), grid_caption),
        "head": Captioned(with_subtitle(panels, subtitle(src), theme), panel_caption),
    }
    if obs.sink is not None:  # gpt-oss: a sink the model was given, beside the one it invents on position 0
        out["given"] = _given_sink(src, theme, mass)
    return out


def _given_sink(src: Source, theme: Theme, invented: np.ndarray) -> Captioned:
    """Each head's mean share on its learned sink (L, H), and how it compares with position 0's."""
    given = src.obs.metrics["sink"]
    grid = head_scores(
        given,
        title="A sink the model was given: each head's learned sink, mean share of a row",
        value_name="learned sink",
        threshold=SINK_THRESHOLD,
        theme=theme,
    )
    strongest = top_heads(given, 3)
    n = int((given >= SINK_THRESHOLD).sum())
    caption = (
        f"Besides any token it may pick as a sink, this model was given one: a learned logit per head that takes "
        f"part in every row's softmax and belongs to no token. {n} of {given.size} heads give it at least "
        f"{pct(SINK_THRESHOLD)} of a row on average (the strongest: {heads_text(given, strongest)}); position 0 "
        f"takes {pct(float(invented.mean()))} on average, the learned sink {pct(float(given.mean()))}. The weights "
        "on the tokens above are what is left: no row is rescaled."
    )
    return Captioned(with_subtitle(grid, subtitle(src), theme), caption)


@view("lesson.induction", page="lessons")
def lesson_induction(src: Source, theme: Theme, *, period: int = 24, seed: int = 0, top: int = 8):
    """Induction score of every head on a repeated random sequence, and the strongest heads' patterns."""
    try:
        run = src.induction(period, seed)
    except ValueError as exc:  # a tokenizer with too few whole words to draw from
        raise ViewUnavailableError(f"No repeated random sequence for {src.loaded.name}: {exc}.") from None
    scores = run["induction"]
    grid = head_scores(
        scores,
        title=f"Induction score: {period} random tokens, then the same {period} again",
        value_name="induction",
        threshold=INDUCTION_THRESHOLD,
        theme=theme,
    )
    best = top_heads(scores, top)
    strong = int((scores >= INDUCTION_THRESHOLD).sum())
    prev = top_heads(run["previous"], 1)[0]
    caption = (
        f"Score = mean weight from each token of the second copy to the token after its first occurrence "
        f"(Olsson et al., 2022). {strong} of {scores.size} heads score at least {INDUCTION_THRESHOLD}; the top "
        f"three: {heads_text(scores, best[:3])}. An induction head needs a previous-token head before it: the "
        f"strongest here is L{prev[0]}H{prev[1]} ({run['previous'][prev]:.2f} on the previous token)."
    )
    patterns = np.stack([run["patterns"][lay, hd] for lay, hd in best])  # (K, 2p, 2p)
    labels = [f"L{lay}H{hd}<br>{scores[lay, hd]:.2f}" for lay, hd in best]
    thumbs = ranked_heads(patterns, labels, best, title=f"The {len(best)} strongest induction heads", theme=theme)
    sequence = run["text"][: len(run["text"]) // 2]
    thumbs_caption = (
        f"Each thumbnail is the head on the repeated sequence (“{sequence.strip()[:80]}…” twice); an induction "
        "head draws a diagonal stripe in the lower left, one step right of the repeat. Click one to open it."
    )
    return {
        "grid": Captioned(with_subtitle(grid, src.loaded.name, theme), caption),
        "top": Captioned(with_subtitle(thumbs, src.loaded.name, theme), thumbs_caption),
    }


def _compared(a: float, b: float, apart_words: str, same_words: str) -> str:
    """Two distances in the fewest decimals that tell them apart (``apart_words`` with {a} and {b}), or, equal to
    four decimals, the one value in three significant digits (``same_words`` with {a})."""
    x, y = apart(a, b)
    return apart_words.format(a=x, b=y) if x != y else same_words.format(a=f"{a:.3g}")


@view("lesson.gqa", page="lessons")
def lesson_gqa(src: Source, theme: Theme, *, layer: int = 0, kv: int = 0):
    """The query heads that share one key/value head, and how alike such heads attend, layer by layer."""
    cfg = src.loaded.model.cfg
    if cfg.group_size == 1:
        raise ViewUnavailableError(
            f"{src.loaded.name} gives every query head its own key/value head (multi-head attention). "
            "SmolLM2 shares each K/V head between 3 query heads (grouped-query attention)."
        )
    obs, g = src.obs, cfg.group_size
    kv = min(max(kv, 0), cfg.kv_heads - 1)
    heads = list(range(kv * g, kv * g + g))
    panels = heatmap_panels(
        [(obs.patterns[layer, h], obs.tokens, obs.tokens, f"query head {h}") for h in heads],
        title=f"Layer {layer}: query heads {heads[0]}–{heads[-1]} share key/value head {kv}",
        theme=theme,
        shared_rows=True,
    )
    within, across = group_distances(obs.patterns, g)
    lines = group_distance_lines(within, across, title="Do heads that share K and V attend alike?", theme=theme)
    alike = int(np.sum(within < across))
    here = _compared(within[layer], across[layer], "{a} (heads of other groups: {b})", "{a}, as between groups")
    panel_caption = (
        f"These {g} heads read the same keys and values; only their queries differ, so their patterns can "
        f"differ too. Mean JS distance between them in layer {layer}: {here}."
    )
    mean = _compared(np.nanmean(within), np.nanmean(across), "mean distance {a} vs {b}", "mean distance {a} in both")
    line_caption = (
        f"In {alike} of {len(within)} layers, heads that share a K/V head attend more alike than heads that do "
        f"not ({mean}). {cfg.n_heads} query heads "
        f"read {cfg.kv_heads} K/V heads, so the KV cache is {g}× smaller than with one per query head."
    )
    return {
        "group": Captioned(with_subtitle(panels, subtitle(src), theme), panel_caption),
        "layers": Captioned(with_subtitle(lines, subtitle(src), theme), line_caption),
    }
