"""The views of a training run ("Watch it learn"): the curves, every head at one step, the chosen head at one step
(the animation's frames) and before / at / after the phase change, each with a caption computed from the numbers
it draws. They are :class:`View` objects like every other view, so the export path (PNG, SVG, slide, GIF, MP4)
treats them the same; a run is their source instead of a text."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

from model.learn.loop import Run
from model.learn.phase import PhaseChange, formed, loss_at, phase_change, smooth
from model.learn.store import describe, tokenizer_of
from model.learn.tasks import TASKS
from viz.figures.common import Theme, safe_filename
from viz.figures.heatmaps import attention_heatmap
from viz.figures.learn import before_after, learning_curves
from viz.figures.overview import model_overview
from viz.views.base import View

#: what model.learn.loop.snapshot measures per head: the task's score, then Head metrics' own (UNBOUNDED: not in 0…1)
SCORES = ("task", "previous", "first", "entropy", "mean_distance", "self", "next", "max_weight")
UNBOUNDED = ("entropy", "mean_distance")


@dataclass
class Progress:
    """What a run's snapshots say so far, as numpy arrays (read once per page run)."""

    run: Run

    def __post_init__(self) -> None:
        snaps = self.run.view()
        self.snaps = snaps
        self.steps = np.array([s.step for s in snaps], dtype=np.int64)  # (K,)
        last = snaps[-1].step if snaps else 0  # up to the newest snapshot: every view of it draws the same steps
        self.losses = np.array(self.run.losses[:last], dtype=np.float64)  # (S,)
        self.probe_loss = np.array([s.loss for s in snaps])  # (K,)
        self.accuracy = np.array([s.accuracy for s in snaps])  # (K,)

    def scores(self, name: str = "task") -> np.ndarray:
        """(K, L, H): a score of every head at every snapshot (NaN where a run stored before it was measured)."""
        shape = self.snaps[0].scores["task"].shape
        return np.stack([s.scores[name].numpy() if name in s.scores else np.full(shape, np.nan) for s in self.snaps])

    @cached_property
    def task(self):
        return TASKS[self.run.spec.task]

    @cached_property
    def phase(self) -> PhaseChange | None:
        return phase_change(self.losses)

    @cached_property
    def formed(self) -> dict[tuple[int, int], int]:
        return formed(self.steps, self.scores()) if self.snaps else {}

    def _labels(self, ids) -> list[str]:
        tok = tokenizer_of(self.run.spec)
        return list(tok.labels([tok.id_to_token(int(i)) for i in ids]))

    @cached_property
    def tokens(self) -> list[str]:
        """The query tokens of the drawn patterns: the probe sequence (the decoder's input for seq2seq)."""
        return self._labels(self.run.probe.ids[0])

    @cached_property
    def keys(self) -> list[str] | None:
        """The key tokens when they differ from the queries: the source a decoder's cross-attention reads."""
        source = self.run.probe.source
        return None if source is None else self._labels(source[0])

    @cached_property
    def masked(self) -> np.ndarray | None:
        """(N, N) cells the causal mask blocks (drawn grey), or None for an encoder."""
        n = int(self.run.probe.ids.size(1))
        return np.triu(np.ones((n, n), dtype=bool), 1) if self.task.causal and not self.task.seq2seq else None

    def best_head(self) -> tuple[int, int]:
        """The head with the highest task score at the last snapshot."""
        last = self.scores()[-1]
        return tuple(int(i) for i in np.unravel_index(int(np.argmax(last)), last.shape))  # type: ignore[return-value]

    def index_of(self, step: int) -> int:
        """The snapshot at or just before ``step``."""
        return int(max(0, np.searchsorted(self.steps, step, side="right") - 1))

    def moment(self, head: tuple[int, int]) -> tuple[int | None, str]:
        """The step to look around for ``head``: when it formed, else the phase change (None: neither), and what
        that step is, in words."""
        if head in self.formed:
            return self.formed[head], f"the step it formed ({self.formed[head]:,})"
        if self.phase is not None:
            return self.phase.step, f"the phase change (step {self.phase.step:,})"
        return None, "the run's middle (no phase change found)"

    def moments(self, head: tuple[int, int] | None = None) -> tuple[int, int, int]:
        """Snapshot indices before, at and after :meth:`moment` (or the first, middle and last snapshots)."""
        k = len(self.snaps) - 1
        step = self.moment(head)[0] if head is not None else (self.phase.step if self.phase else None)
        if step is None:
            return 0, k // 2, k
        at = self.index_of(step)
        width = max(1, k // 8)
        return max(0, at - width), at, min(k, at + width)


def _a(word: str) -> str:
    return f"{'an' if word[0] in 'aeiou' else 'a'} {word}"


def _selection(progress: Progress) -> dict:
    """What a learn view's provenance says it comes from: the run and its model, not the sidebar's."""
    spec = progress.run.spec
    return {"run": spec.key, "model": f"trained on Watch it learn: {describe(spec)}", "step": int(progress.steps[-1])}


def _view(key: str, progress: Progress, theme: Theme, build, title: str, name: str, caption: str) -> View:
    """A learn view as every view is: drawn in ``theme``, rebuilt by ``build`` in another (slides), its run and
    model as its provenance."""
    return View(key, build(theme), title, name, caption=caption, restyle=build, theme=theme,
                selection=_selection(progress))  # fmt: skip


def _name(progress: Progress, key: str, **parts) -> str:
    bits = [f"{k}-{v}" for k, v in parts.items()]
    return safe_filename("watch-it-learn", progress.run.spec.task, progress.run.spec.key, key, *bits)


def summary(progress: Progress) -> str:
    """The computed sentence of the run: which heads formed when, and what the loss did then."""
    spec, task = progress.run.spec, progress.task
    if not progress.snaps:
        return "No snapshot yet."
    done = f"{progress.losses.size:,} of {spec.steps:,} steps"
    phase = progress.phase
    if progress.formed:
        (layer, head), step = next(iter(progress.formed.items()))
        before = loss_at(progress.losses, max(1, step - max(25, spec.steps // 20)))
        after = loss_at(progress.losses, min(progress.losses.size, step + max(25, spec.steps // 20)))
        sentence = (
            f"L{layer}H{head} became {_a(task.score_name)} head at step {step:,} (its score reached 0.5), when the "
            f"loss fell from {before:.1f} to {after:.1f}."
        )
        others = [f"L{lh[0]}H{lh[1]} at {s:,}" for lh, s in list(progress.formed.items())[1:6]]
        if others:
            sentence += " Then " + ", ".join(others) + "."
    else:
        layer, head = progress.best_head()
        best = progress.scores()[-1, layer, head]
        sentence = (
            f"No head has reached {_a(task.score_name)} score of 0.5 after {done}; the best is L{layer}H{head} at "
            f"{best:.2f}."
        )
        shifted = shifted_induction(progress)
        if shifted:
            sentence += " " + shifted
    if phase is not None:
        sentence += (
            f" The loss's steepest fall is at step {phase.step:,} ({phase.before:.2f} → {phase.after:.2f} nats)."
        )
    last = progress.snaps[-1]
    sentence += f" Held-out loss {last.loss:.2f}, accuracy {last.accuracy:.0%} after {done}."
    return sentence


def score_label(progress: Progress, score: str) -> str:
    """A score's name as the page says it ("induction score", "entropy (nats)")."""
    names = {"task": f"{progress.task.score_name} score", "previous": "previous-token score",
             "first": "weight on the first token", "entropy": "entropy (nats)",
             "mean_distance": "mean distance (tokens)", "self": "weight on itself", "next": "weight on the next token",
             "max_weight": "largest weight"}  # fmt: skip
    if progress.task.seq2seq:  # cross-attention: keys are the source's tokens
        names.update(previous="weight on the same source position", first="weight on the source's first token")
    return names[score]


def shifted_induction(progress: Progress) -> str:
    """When no induction head formed: the head that attends a few tokens *after* the earlier occurrence (it
    reads what layer 0 copied from as many tokens back), said from the last snapshot's first probe sequence; ""
    when there is none (or the task is not induction)."""
    if progress.run.spec.task != "induction" or not progress.snaps:
        return ""
    p = progress.snaps[-1].patterns.float().numpy()  # (L, H, N, N)
    n = p.shape[-1]
    period = (n - 1) // 2
    queries = np.arange(period + 1, n - 1)
    best = (0.0, 0, 0, 0)
    for shift in range(2, 7):  # 1 is the induction head itself
        keys = queries - period + shift
        ok = keys < queries
        weight = p[:, :, queries[ok], keys[ok]].mean(axis=-1)  # (L, H)
        layer, head = np.unravel_index(int(np.argmax(weight)), weight.shape)
        best = max(best, (float(weight[layer, head]), shift, int(layer), int(head)))
    weight, shift, layer, head = best
    if weight < 0.5:
        return ""
    return (
        f"It found another circuit: L{layer}H{head} attends {shift} tokens after the earlier occurrence (mean weight "
        f"{weight:.2f}), where earlier layers have copied the tokens {shift - 1} and {shift} back: a shifted "
        "induction head, which the score does not count."
    )


def curves(progress: Progress, theme: Theme, *, now: int | None = None, chosen=None, score: str = "task") -> View:
    """Loss and every head's ``score`` (SCORES) over the steps, the phase change marked."""
    window = max(5, progress.losses.size // 40)
    phase = progress.phase.step if progress.phase is not None else None

    def build(t: Theme):
        return learning_curves(
            progress.losses, progress.steps, progress.probe_loss, progress.scores(score),
            smoothed=smooth(progress.losses, window) if progress.losses.size else None,
            score_name=score_label(progress, score), phase=phase, chosen=chosen,
            now=None if t.box else now,  # the slider's "shown" marker is a control of the screen, not of a slide
            threshold=None if score in UNBOUNDED else 0.5,
            title="Loss and each head's score as it trains", theme=t,
        )  # fmt: skip

    title = "Loss and each head's score as it trains"
    name = _name(progress, "curves", score=score, step=progress.losses.size)
    return _view("learn.curves", progress, theme, build, title, name, summary(progress))


def frame(progress: Progress, theme: Theme, *, index: int, chosen: tuple[int, int]) -> View:
    """The chosen head's pattern on the first probe sequence at snapshot ``index`` (an animation frame)."""
    snap = progress.snaps[index]
    layer, head = chosen
    score = float(snap.scores["task"][layer, head])
    kind = " cross-attention" if progress.task.seq2seq else ""
    title = f"L{layer}H{head}{kind} at step {snap.step:,}"

    def build(t: Theme):
        p = snap.patterns[layer, head].float().numpy()
        return attention_heatmap(p, progress.tokens, key_tokens=progress.keys, title=title, theme=t, zmin=0, zmax=1,
                                 masked=progress.masked)  # fmt: skip

    caption = (
        f"Step {snap.step:,}: held-out loss {snap.loss:.2f}, accuracy {snap.accuracy:.0%}; L{layer}H{head}'s "
        f"{progress.task.score_name} score {score:.2f}."
    )
    name = _name(progress, "head", head=f"L{layer}H{head}", step=snap.step)
    return _view("learn.frame", progress, theme, build, title, name, caption)


def heads(progress: Progress, theme: Theme, *, index: int, chosen: tuple[int, int]) -> View:
    """Every head's pattern at snapshot ``index`` as small multiples (click one to choose it)."""
    snap = progress.snaps[index]
    title = f"Every {'cross-attention ' if progress.task.seq2seq else ''}head at step {snap.step:,}"

    def build(t: Theme):
        return model_overview(snap.patterns.float().numpy(), title=title, theme=t, selected=chosen)

    scores = snap.scores["task"].numpy()
    layer, head = (int(i) for i in np.unravel_index(int(np.argmax(scores)), scores.shape))
    caption = (
        f"Step {snap.step:,}: the highest {progress.task.score_name} score is L{layer}H{head}'s "
        f"({scores[layer, head]:.2f}); each thumbnail on its own colour scale."
    )
    name = _name(progress, "heads", step=snap.step)
    return _view("learn.heads", progress, theme, build, title, name, caption)


def moments(progress: Progress, theme: Theme, *, chosen: tuple[int, int]) -> View:
    """The chosen head before, at and after it formed (else the phase change)."""
    idx = progress.moments(chosen)
    layer, head = chosen
    shots = [progress.snaps[i] for i in idx]
    label = f"L{layer}H{head}"
    where = progress.moment(chosen)[1]
    title = f"{label} before, at and after {where.split(' (')[0]}"

    def build(t: Theme):
        patterns = np.stack([s.patterns[layer, head].float().numpy() for s in shots])
        steps = [s.step for s in shots]
        return before_after(patterns, progress.tokens, steps, head=label, theme=t, masked=progress.masked,
                            key_tokens=progress.keys, title=title)  # fmt: skip

    scores = [float(s.scores["task"][layer, head]) for s in shots]
    caption = (
        f"{label} around {where}: its {progress.task.score_name} score "
        + " → ".join(f"{v:.2f} (step {s.step:,})" for v, s in zip(scores, shots, strict=True))
        + "; held-out loss "
        + " → ".join(f"{s.loss:.2f}" for s in shots)
        + "."
    )
    name = _name(progress, "before-after", head=label)
    return _view("learn.moments", progress, theme, build, title, name, caption)
