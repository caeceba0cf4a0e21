"""Motion on slides. A deck item may carry a recipe for an animation (``item["motion"]``): the step-through of one
head on a text, or a training run's snapshots of one head. At export the recipe's frames are rebuilt by the view
registry, rendered as slides and joined into an animated GIF, which PowerPoint and LibreOffice play in the slide
show and the HTML deck shows as it is (its first frame is a still for anything that does not animate). The recipe
is small plain data, so a session file or a link carries it. No Streamlit here."""

from __future__ import annotations

from viz.export.animation import gif, render_frames
from viz.figures import Theme
from viz.views.animate import STEPS

STEP_SECONDS = 1.5  # each of the 12 steps on a slide: the whole computation in 18 s
SNAPSHOT_SECONDS = 0.5  # each training snapshot
RUN_FRAMES = 12  # snapshots of a run's head shown on a slide, evenly spaced around the moment it formed


def step_motion(model: str, text: str, layer: int, head: int, query: int) -> dict:
    """The recipe of one head's 12 steps on ``text`` (``model``: a catalog entry's kind)."""
    return {"kind": "steps", "model": model, "text": text, "layer": layer, "head": head, "query": query}


def run_motion(run: str, layer: int, head: int) -> dict:
    """The recipe of a Watch it learn run's head across its snapshots (``run``: the run's key)."""
    return {"kind": "run", "run": run, "layer": layer, "head": head}


def frame_indices(n: int, at: int, count: int = RUN_FRAMES) -> list[int]:
    """``count`` snapshot indices out of ``n``, evenly spaced from the first to the last with ``at`` among them, in
    the order the GIF plays them: from ``at`` on, then round from the start — its first frame, the still a slide
    shows where GIFs do not play, is the moment itself, never the random start."""
    picked = {round(i * (n - 1) / max(1, count - 1)) for i in range(count)} if n > 1 else {0}
    nearest = min(picked, key=lambda i: abs(i - at))
    ordered = sorted((picked - {nearest}) | {at})
    k = ordered.index(at)
    return ordered[k:] + ordered[:k]


def motion_views(recipe: dict, theme: Theme | None = None) -> tuple[list, float]:
    """(the frames as views, in order; the seconds each is shown) of a motion recipe."""
    theme = theme or Theme()
    if recipe.get("kind") == "steps":
        from model.io.catalog import ModelSpec
        from viz.views import build
        from viz.views.source import DirectSource

        src = DirectSource.for_text(ModelSpec(recipe["model"]), recipe["text"])
        chosen = {k: int(recipe[k]) for k in ("layer", "head", "query")}
        return [build("anim.frame", src, theme, step=s, **chosen)[0] for s in range(len(STEPS))], STEP_SECONDS
    if recipe.get("kind") == "run":
        from model.learn.store import read
        from viz.views.learn import Progress, frame

        stored = read(None, str(recipe["run"]))
        if stored is None:
            raise ValueError(f"the training run {recipe['run']} is not stored on this server any more")
        told = Progress(stored)
        chosen = (int(recipe["layer"]), int(recipe["head"]))
        at = told.index_of(told.moment(chosen)[0] or int(told.steps[len(told.steps) // 2]))
        frames = [frame(told, theme, index=i, chosen=chosen) for i in frame_indices(len(told.snaps), at)]
        return frames, SNAPSHOT_SECONDS
    raise ValueError(f"unknown motion {recipe.get('kind')!r}")


def motion_gif(recipe: dict, *, size: str = "slide") -> bytes:
    """The recipe's frames as an endlessly looping GIF, each laid out as a slide (the first frame a still)."""
    views, seconds = motion_views(recipe)
    return gif(render_frames(views, size=size, caption=False), seconds)
