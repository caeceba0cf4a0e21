"""Motion on slides: a deck item's animation recipe becomes a looping GIF at export — the step-through of a head (12
frames) or a training run's head across its snapshots, whose first frame is the moment it formed — and plays in the
.pptx and the HTML deck; the first frame of the step-through is never a blank panel."""

from __future__ import annotations

import io

import numpy as np
import pytest
from PIL import Image

from model.io.catalog import ModelSpec
from viz.export.motion import frame_indices, motion_gif, motion_views, run_motion, step_motion
from viz.figures import Theme
from viz.views import build
from viz.views.source import DirectSource

TEXT = "The animal didn't cross the street because it was too tired."


def test_frame_indices_start_at_the_moment():
    order = frame_indices(39, 14, count=12)
    assert order[0] == 14 and sorted(order) == sorted(set(order)) and len(order) == 12
    assert 0 in order and 38 in order and order == sorted(order[: order.index(38) + 1]) + order[order.index(38) + 1 :]


@pytest.mark.parametrize("kind", ["bundled", "minilm"])
def test_the_first_frame_shows_every_panel(kind):
    """Each panel of "tokens become vectors" is drawn on a colour scale it uses (MiniLM's token and position panels
    were near-blank beside its LayerNorm-ed sum)."""
    src = DirectSource.for_text(ModelSpec(kind), TEXT)
    (view,) = build("anim.frame", src, Theme(), layer=1, head=0, query=10, step=0)
    bound = view.figure.layout.coloraxis.cmax
    heatmaps = [t for t in view.figure.data if t.type == "heatmap" and t.name != "masked"]
    assert len(heatmaps) == 3
    for trace in heatmaps:
        z = np.abs(np.asarray(trace.z, dtype=float))
        assert np.percentile(z, 90) >= 0.1 * bound, (kind, trace.xaxis, np.percentile(z, 90), bound)


@pytest.mark.slow
def test_the_step_through_as_a_gif(tmp_path):
    recipe = step_motion("bundled", TEXT, 2, 0, 10)
    views, seconds = motion_views(recipe)
    assert [v.title.split(":")[0] for v in views] == [f"Step {i}/12" for i in range(1, 13)] and seconds == 1.5
    data = motion_gif(recipe)
    image = Image.open(io.BytesIO(data))
    assert image.format == "GIF" and image.n_frames == 12 and image.info.get("loop") == 0


@pytest.mark.slow
def test_a_run_in_motion_starts_at_the_moment_it_formed(default_run, monkeypatch):
    run, folder = default_run
    monkeypatch.setenv("ATTENTION_LAB_RUNS", str(folder))
    views, seconds = motion_views(run_motion(run.spec.key, 1, 0))
    assert seconds == 0.5 and len(views) == 12
    assert views[0].title.startswith("L1H0 at step 560")  # formed there (tests/model/test_learn.py)
    with pytest.raises(ValueError, match="not stored"):
        motion_views(run_motion("0" * 12, 1, 0))


@pytest.mark.slow
def test_motion_plays_in_the_pptx_and_the_html(default_run, monkeypatch):
    import pptx

    from viz.export.deck import deck_html, deck_pptx, make_item
    from viz.export.provenance import provenance

    monkeypatch.setenv("ATTENTION_LAB_RUNS", str(default_run[1]))
    src = DirectSource.for_text(ModelSpec("bundled"), TEXT)
    (view,) = build("anim.frame", src, Theme(), layer=2, head=0, query=10, step=8)
    item = make_item(view, provenance(view, model=src.loaded.name, text=TEXT))
    item["motion"] = step_motion("bundled", TEXT, 2, 0, 10)
    frames = [Image.new("RGB", (160, 90), c) for c in ("white", "black")]
    moving = io.BytesIO()
    frames[0].save(moving, "GIF", save_all=True, append_images=frames[1:], loop=0, duration=500)
    gif = moving.getvalue()
    still = io.BytesIO()
    Image.new("RGB", (1920, 1080), "white").save(still, "PNG")
    data = deck_pptx([item], title="t", render=lambda fig: still.getvalue(), animate=lambda recipe: gif)
    (slide,) = list(pptx.Presentation(io.BytesIO(data)).slides)[1:]
    assert [s.image.content_type for s in slide.shapes if s.shape_type == 13] == ["image/gif"]
    page = deck_html([item], title="t", animate=lambda recipe: gif)
    assert "data:image/gif;base64," in page and "class='plot'" not in page
    assert "class='plot'" in deck_html([item], title="t")  # without animate: its still, interactive
