"""The lecture, built in one go on the lecturer's sentence: the post's story as a list of slide recipes — the view, the
model that really shows it, its selection, the one sentence the slide says and the question for the room with its
expected answer, both computed from the numbers drawn — built by the same view registry as the screen, so the deck,
the HTML and the app never disagree. The result is a list of deck items (viz/export/deck.py): the Lecture deck page
edits and exports it, and ``python -m viz.export --lecture`` writes it. No Streamlit here."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from model.analysis.find import find_heads, token_pairs
from model.io.catalog import ModelSpec, available
from viz.export.deck import make_item
from viz.export.lecture_story import ASKS, takeaway
from viz.export.motion import run_motion, step_motion
from viz.export.provenance import provenance
from viz.figures import Theme
from viz.views import build
from viz.views.animate import STEPS
from viz.views.find import COREFERENCE
from viz.views.source import DirectSource

#: the models a lecture draws on, by role: the post's pre-norm encoder, a pretrained one (heads specialise)
MAIN, PRETRAINED = ModelSpec("bundled"), ModelSpec("minilm")


@dataclass
class Story:
    """What the slides follow: the lecturer's text on the post's encoder, the query token and head the mechanics
    slides use (chosen from the numbers), and the strongest “it” → “animal” head over the models installed."""

    text: str
    main: DirectSource
    query: int
    layer: int
    head: int
    why: str  # how the query and head were chosen, for the notes
    link: tuple[DirectSource, int, int, int, int] | None = None  # (source, layer, head, "it", "animal")
    pretrained: DirectSource | None = None
    notes: list[str] = field(default_factory=list)  # what the lecture had to leave out, and why


def _pick(src: DirectSource) -> tuple[int, int, int, str]:
    """(query, layer, head, why): "it" when the text has it, else the ordinary token with the most decided look; the
    head where that query gives its largest weight to an ordinary token that is not itself or a neighbour."""
    obs = src.obs
    ordinary = [i for i in range(obs.n_tokens) if not obs.special[i]]
    w = obs.patterns.astype(np.float64)  # (L, H, N, N)
    far = np.ones((obs.n_tokens, obs.n_tokens), dtype=bool)
    for i in range(obs.n_tokens):
        far[i, max(0, i - 1) : i + 2] = False
    words = [any(ch.isalnum() for ch in t) and not obs.special[i] for i, t in enumerate(obs.tokens)]
    far[:, [i for i in range(obs.n_tokens) if not words[i]]] = False  # a word: not [CLS], not punctuation
    looks = np.where(far[None, None], w, 0).max(-1)  # (L, H, N): each query's strongest distant ordinary key
    if "it" in obs.tokens:
        query = obs.tokens.index("it")
        how = "“it” is in the text"
    else:
        query = max(ordinary, key=lambda q: float(looks[:, :, q].max())) if ordinary else 0
        how = f"{obs.tokens[query]} is the token that looks hardest at a distant word"
    layer, head = (int(v) for v in np.unravel_index(int(looks[:, :, query].argmax()), looks.shape[:2]))
    key = int(np.where(far[query], w[layer, head, query], -1).argmax())
    why = f"{how}; in L{layer}H{head} it gives {w[layer, head, query, key]:.0%} of its weight to {obs.tokens[key]}"
    return query, layer, head, why


def story(text: str) -> Story:
    """The story's sources and choices for ``text`` (the coreference sentence when empty)."""
    text = text.strip() or COREFERENCE
    main = DirectSource.for_text(MAIN, text)
    query, layer, head, why = _pick(main)
    told = Story(text, main, query, layer, head, why)
    if available(PRETRAINED.kind)[0]:
        told.pretrained = DirectSource.for_text(PRETRAINED, text)
    else:
        told.notes.append("Heads specialise is shown on the bundled model: all-MiniLM-L6-v2 is not installed.")
    best = None
    for src in (main, told.pretrained):
        if src is None:
            continue
        on = src if src.obs.text == COREFERENCE else DirectSource.for_text(src.spec, COREFERENCE)
        tokens = on.obs.tokens
        if "it" not in tokens or "animal" not in tokens:
            continue
        it, animal = tokens.index("it"), tokens.index("animal")
        found = find_heads(on.obs.patterns, token_pairs(on.obs.n_tokens, [it], [animal]), on.obs.special)
        for lay, hd in found.ranking():
            if not found.flagged[lay, hd]:  # a column pattern (everyone looks there) does not link the two
                score = float(found.score[lay, hd])
                if best is None or score > best[0]:
                    best = (score, (on, int(lay), int(hd), it, animal))
                break
    told.link = best[1] if best else None
    return told


@dataclass(frozen=True)
class Recipe:
    """One slide: a view of a source chosen by ``source``, with ``select``'s selection; ``predict``: a question slide
    first (the post invites a guess there); ``ask``: the key of ASKS (question and expected answer)."""

    key: str
    ask: str
    select: Callable[[Story], dict] = lambda s: {}
    source: Callable[[Story], DirectSource | None] = lambda s: s.main
    predict: bool = False
    motion: bool = False  # the slide plays the head's 12 steps (viz/export/motion.py); the view is its still
    says_answer: bool = False  # the slide's sentence is the computed answer (the caption opens with its setup)


def _frame(step: str) -> Callable[[Story], dict]:
    return lambda s: {"layer": s.layer, "head": s.head, "query": s.query, "step": STEPS.index(step)}


def _link(s: Story) -> DirectSource | None:
    return s.link[0] if s.link else None


LECTURE: tuple[Recipe, ...] = (
    Recipe("anim.frame", "tokens", _frame("embeddings")),
    Recipe("pe.formula", "positions", lambda s: {"n_positions": 64}),
    Recipe("anim.frame", "query", _frame("Q")),
    Recipe("anim.frame", "value", _frame("V")),
    Recipe("anim.frame", "qk", _frame("q·k"), predict=True),
    Recipe("anim.frame", "scale", _frame("÷√d_k")),
    Recipe("lesson.scaling", "scaling", says_answer=True),
    Recipe("anim.frame", "softmax", _frame("softmax")),
    Recipe("anim.frame", "mix", _frame("·V")),
    Recipe("anim.frame", "motion", _frame("softmax"), motion=True),
    Recipe("heads", "heads", lambda s: {"layer": s.layer, "query": s.query}),
    Recipe("lesson.kinds", "kinds", lambda s: {}, lambda s: s.pretrained or s.main),
    Recipe("block.diagram", "block"),
    Recipe("block.stream", "stream"),
    Recipe("masks.causal", "mask", lambda s: {"layer": s.layer, "head": s.head}),
    Recipe("perm", "perm", lambda s: {"layer": s.layer, "head": s.head, "positions_on": False}),
    Recipe(
        "lesson.predict",
        "link",
        lambda s: {"layer": s.link[1], "head": s.link[2], "query": s.link[3], "guess": s.link[4]},
        _link,
        predict=True,
    ),
)


def lecture_items(text: str, *, theme: Theme | None = None, progress=None) -> tuple[list[dict], list[str]]:
    """The lecture's deck items on ``text`` (the induction slides excepted: :func:`induction_items`), and notes on
    what was left out. ``progress(fraction, message)`` is told as slides are built."""
    theme = theme or Theme()
    progress = progress or (lambda f, m: None)
    told = story(text)
    items = []
    for i, recipe in enumerate(LECTURE):
        src = recipe.source(told)
        if src is None:
            told.notes.append(f"No slide for “{recipe.ask}”: no installed model links “it” to “animal”.")
            continue
        progress(i / len(LECTURE), f"slide {i + 2}: {recipe.key}")
        (view,) = build(recipe.key, src, theme, **recipe.select(told))
        question, answer = ASKS[recipe.ask](told, src, view)
        record = provenance(view, model=src.loaded.name, text=src.obs.text)
        item = make_item(view, record, question=question if recipe.predict else "")
        # a figure without a caption says its answer; so does a motion slide (its still is one of its frames)
        item["takeaway"] = takeaway(answer if recipe.motion or recipe.says_answer else view.caption or answer)
        item["notes"] = {"ask": question, "answer": answer, "chosen": told.why if src is told.main else ""}
        if recipe.motion:
            item["motion"] = step_motion(src.spec.kind, src.obs.text, told.layer, told.head, told.query)
        items.append(item)
    return items, told.notes


def induction_items(*, theme: Theme | None = None, progress=None, train: bool = True) -> tuple[list[dict], list[str]]:
    """The last two slides — an induction head forming — from Watch it learn's default run: the stored one, else
    trained now (about 20 s on 2 cores) and stored, so the page shows the very run the slides do. ``train`` False:
    no slides and a note when no run is stored."""
    from model.learn.loop import TrainSpec
    from model.learn.loop import train as train_run
    from model.learn.store import read, runs_root, write
    from viz.views.learn import Progress, curves, frame, moments, summary

    theme = theme or Theme()
    progress = progress or (lambda f, m: None)
    spec = TrainSpec()
    run = read(None, spec.key)
    if run is None and not train:
        return [], ["No induction slides: Watch it learn's default run is not trained yet (train it there, or build "
                    "the lecture with training)."]  # fmt: skip
    if run is None:
        every = max(1, spec.steps // 50)  # a report per 2 %: a progress bar per step cost the page seconds

        def told(step: int, steps: int) -> None:
            if step % every == 0 or step == steps:
                progress(step / steps, f"training the induction run: step {step:,} of {steps:,}")

        run = train_run(spec, progress=told)
        write(run, runs_root())
    told = Progress(run)
    chosen = min(told.formed, key=told.formed.get) if told.formed else told.best_head()
    label = f"L{chosen[0]}H{chosen[1]}"
    step, where = told.moment(chosen)
    at = told.index_of(step or int(told.steps[len(told.steps) // 2]))
    first, last = (float(told.snaps[i].scores["task"][chosen]) for i in (0, -1))
    playing = (
        f"Watch {label} through training: when does it start looking at the token after the previous occurrence?",
        f"Around {where}: the offset diagonal appears, and its induction score rises from {first:.2f} to {last:.2f}.",
    )
    asks = (
        (curves(told, theme, chosen=chosen), "When does the loss fall, and what forms at that moment?", summary(told)),
        (moments(told, theme, chosen=chosen), f"What changes in {label}'s pattern when the loss falls?", ""),
        (frame(told, theme, index=at, chosen=chosen), *playing),
    )
    items = []
    for i, (view, question, answer) in enumerate(asks):
        item = make_item(view, provenance(view, model=view.selection["model"], text=""))
        item["takeaway"] = takeaway(view.caption if i < 2 else answer)
        item["notes"] = {"ask": question, "answer": answer or takeaway(view.caption), "chosen": ""}
        if i == 2:  # the head's snapshots in motion; the still is the moment it formed
            item["motion"] = run_motion(spec.key, *chosen)
        items.append(item)
    return items, []


def build_lecture(text: str, *, theme: Theme | None = None, progress=None, train: bool = True) -> tuple[list, list]:
    """The whole lecture on ``text``: (deck items, notes on what was left out)."""
    progress = progress or (lambda f, m: None)
    items, notes = lecture_items(text, theme=theme, progress=lambda f, m: progress(0.3 * f, m))
    more, more_notes = induction_items(theme=theme, progress=lambda f, m: progress(0.3 + 0.7 * f, m), train=train)
    progress(1.0, "done")
    return items + more, notes + more_notes
