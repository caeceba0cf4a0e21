"""Regenerate the README's screenshots on purpose: ``python scripts/screenshots.py``.

Starts the app, types the README's sentence and saves one screenshot per page in assets/screenshots/.
(The browser tests write theirs under build/screenshots/ and never touch the committed ones.)
``--lessons`` instead renders each lesson's figure, as exported, to assets/screenshots/lessons/ and prints
its computed caption beside the file name (the figures of the lessons the README links); ``--claims`` renders the
figures of the README's "six claims" table (with their caption band) to assets/screenshots/claims/; ``--seq2seq``
trains the dates encoder–decoder (12 s) and renders its decoder's sharpest cross-attention head, as the attention map
exports it, to assets/screenshots/learn/ (docs/watch-it-learn.md); ``--learn`` trains the default induction run
(17 s) and a one-layer dates run (3 s) and renders, as Watch it learn exports them, the induction run's curves and
its chosen head before / at / after it formed, and the dates head's alignment forming, to assets/screenshots/learn/.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from scripts.browser import PAGES, ROOT, chromium, open_page, streamlit_server, type_text, wait_idle

SENTENCE = "The quick brown fox jumps over the lazy dog."
OUT = ROOT / "assets" / "screenshots"


LESSON_TEXT = "The animal didn't cross the street because it was too tired."
#: (file name, view key, selection) on all-MiniLM-L6-v2: one figure per lesson
LESSONS = [
    ("predict-first", "lesson.predict", {"layer": 3, "head": 1, "query": 10, "guess": 2}),
    ("find-heads", "find", {"relation": "tokens", "queries": (10,), "keys": (2,)}),
    ("mask-change", "masks.change", {}),
    ("padding", "masks.padding", {}),
    ("permutation-off", "perm", {"layer": 2, "head": 3}),
    ("permutation-on", "perm", {"layer": 2, "head": 3, "positions_on": True}),
    ("qk-plane", "qkv.plane", {"layer": 3, "head": 1, "query": 10}),
    ("one-query", "qkv.query", {"layer": 3, "head": 1, "query": 10}),
    ("value-norms", "qkv.values", {"layer": 2, "head": 3}),
    ("wavelengths", "pe.curves", {}),
    ("sinusoid-table", "pe.formula", {}),
    ("learned-table", "pe.model", {}),
    ("scaling", "lesson.scaling", {}),
    ("heads-specialise", "lesson.spread", {"metric": "previous"}),
    ("ablation", "lesson.ablation", {"ablate": ((0, 2),)}),
]


def lessons() -> None:
    from model.io.catalog import ModelSpec
    from viz.export.render import render_image
    from viz.figures.theme import Theme
    from viz.views import build
    from viz.views.source import DirectSource

    out = OUT / "lessons"
    out.mkdir(parents=True, exist_ok=True)
    src = DirectSource.for_text(ModelSpec("minilm"), LESSON_TEXT)
    for name, key, selection in LESSONS:
        view = build(key, src, Theme(), **selection)[0]
        path = out / f"{name}.png"
        path.write_bytes(render_image(view.figure, "png", scale=1))
        print(f"{path.relative_to(ROOT)}: {view.caption or view.figure.layout.title.text}")


#: (file name, model, view key, selection, width px): the README's six-claims figures, as downloaded
CLAIMS = [
    ("block-bundled", "bundled", "block.diagram", {}, 600),
    ("block-minilm", "minilm", "block.diagram", {}, 600),
    ("pre-or-post-norm", "bundled", "lesson.norms", {}, 900),
    ("stream-bundled", "bundled", "block.stream", {}, 900),
    ("gallery-minilm", "minilm", "heads.gallery", {}, 900),
    ("heads-specialise", "bundled", "lesson.kinds", {}, 900),
    *(
        (f"step-{s + 1:02d}", "bundled", "anim.frame", {"layer": 2, "head": 0, "query": 10, "step": s}, 900)
        for s in (5, 8, 9)
    ),
]


def save_view(view, path: Path, width: int) -> None:
    """The view as the app downloads it (PNG with its caption band), scaled to ``width`` px, saved to ``path``."""
    import io

    from PIL import Image

    from viz.export.render import render_view

    image = Image.open(io.BytesIO(render_view(view, "png", caption=True))).convert("RGB")
    image = image.resize((width, round(image.height * width / image.width)), Image.LANCZOS)
    image.save(path, optimize=True)
    print(f"{path.relative_to(ROOT)}: {view.caption}")


def claims() -> None:
    from model.io.catalog import ModelSpec
    from viz.figures.theme import Theme
    from viz.views import build
    from viz.views.source import DirectSource

    out = OUT / "claims"
    out.mkdir(parents=True, exist_ok=True)
    sources = {kind: DirectSource.for_text(ModelSpec(kind), LESSON_TEXT) for kind in ("bundled", "minilm")}
    for name, kind, key, selection, width in CLAIMS:
        save_view(build(key, sources[kind], Theme(), **selection)[0], out / f"{name}.png", width)


def seq2seq() -> None:
    from model.io.catalog import ModelSpec
    from model.learn.loop import TrainSpec, train
    from model.learn.store import loaded_model
    from model.observe import observe
    from viz.figures.theme import Theme
    from viz.views import build
    from viz.views.source import DirectSource

    spec = TrainSpec(task="dates", n_layers=2, n_heads=4, d_model=64, positional="sinusoidal", steps=400)
    loaded = loaded_model(train(spec), "decoder", "07mar1994")
    obs = observe(loaded.model, loaded.tokenizer, "1994-03-07")
    src = DirectSource(ModelSpec("trained", path=spec.key, source_text="07mar1994"), loaded, obs)
    sharp = obs.cross.max(-1).mean(-1)  # (L, H): each head's mean row maximum
    layer, head = (int(i) for i in divmod(int(sharp.argmax()), sharp.shape[1]))
    save_view(build("cross", src, Theme(), layer=layer, head=head)[0], OUT / "learn" / "dates-cross-attention.png", 900)


def learn() -> None:
    from model.learn.loop import TrainSpec, train
    from viz.figures.theme import Theme
    from viz.views.learn import Progress, curves, moments

    def save(view, name: str) -> None:
        save_view(view, OUT / "learn" / f"{name}.png", 1200)

    induction = Progress(train(TrainSpec(seed=0)))  # the page's default run
    chosen = induction.best_head()
    save(curves(induction, Theme(), chosen=chosen), "induction-curves")
    save(moments(induction, Theme(), chosen=chosen), "induction-before-after")
    dates = Progress(train(TrainSpec(task="dates", n_layers=1, n_heads=4, positional="sinusoidal", steps=300)))
    save(moments(dates, Theme(), chosen=dates.best_head()), "dates-alignment")


def main() -> None:
    if "--learn" in sys.argv[1:]:
        learn()
        return
    if "--seq2seq" in sys.argv[1:]:
        seq2seq()
        return
    if "--lessons" in sys.argv[1:]:
        lessons()
        return
    if "--claims" in sys.argv[1:]:
        claims()
        return
    OUT.mkdir(parents=True, exist_ok=True)
    with streamlit_server() as url, chromium() as browser:
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        page.goto(url)
        wait_idle(page)
        type_text(page, SENTENCE)
        for path, title in PAGES:
            open_page(page, url, path, title)
            shot = OUT / f"{path or 'attention'}.png"
            page.screenshot(path=str(shot))
            print(f"wrote {shot}")


if __name__ == "__main__":
    main()
