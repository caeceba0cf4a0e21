"""The block diagram, the residual-stream chart and the animation's frames: drawn from the numbers, captions
computed from them; the animation's files (GIF, MP4, numbered PNGs) put together from frames."""

from __future__ import annotations

import io
import zipfile

import numpy as np
import pytest

from model.io.catalog import ModelSpec
from tests.security.gguf_files import write_tiny_gguf
from viz.export.animation import gif, mp4, png_zip
from viz.figures import Theme
from viz.figures.block import block_diagram, stream_chart
from viz.views import build
from viz.views.animate import STEPS, WINDOW, window
from viz.views.source import DirectSource

TEXT = "The animal didn't cross the street because it was too tired."


@pytest.fixture(scope="module")
def src():
    return DirectSource.for_text(ModelSpec("bundled"), TEXT)


@pytest.fixture(scope="module")
def decoder(tmp_path_factory):
    path = write_tiny_gguf(tmp_path_factory.mktemp("gguf") / "tiny.gguf")
    return DirectSource.for_text(ModelSpec("folder", path=str(path)), "the then the then there " * 6)


def test_every_part_of_the_diagram_is_a_click_target_with_its_page(src):
    (view,) = build("block.diagram", src, Theme())
    targets = view.figure.data[-1]
    keys = {c[0] for c in targets.customdata}
    assert {"tokens", "embed", "ln1", "attn", "add1", "ln2", "ff", "add2", "final_norm", "head"} <= keys
    pages = {c[0]: c[1] for c in targets.customdata}
    assert pages["attn"] == "attention" and pages["embed"] == "positional" and pages["head"] == "lessons"
    notes = [a.text for a in view.figure.layout.annotations]
    assert "<b>× 4 layers</b>" in notes and "multi-head attention" in notes
    assert view.caption.startswith("Pre-norm")
    arrows = [a for a in view.figure.layout.annotations if a.showarrow]
    lines = [t for t in view.figure.data if t.mode == "lines"]
    assert len(arrows) == len(lines) == 11  # one per edge of a pre-norm model with a final norm and a head


def test_a_diagram_needs_parts_and_the_stream_chart_checks_its_shapes():
    with pytest.raises(ValueError):
        block_diagram([], [], block_rows=(0, 0), n_layers=1)
    with pytest.raises(ValueError, match="one per sublayer"):
        stream_chart([{"name": "m", "labels": ["embedding", "L0 attention"], "norm": [1, 2], "ratio": [1, 2]}])


def test_the_stream_chart_draws_the_numbers_its_caption_states(src):
    (view,) = build("block.stream", src, Theme())
    stream, _ = src.stream()
    line, bars = view.figure.data[0], view.figure.data[1]
    np.testing.assert_allclose(line.y, stream.norm.mean(1))
    np.testing.assert_allclose(bars.y, stream.ratio.mean(1))
    first, last = stream.norm.mean(1)[0], stream.norm.mean(1)[-1]
    assert f"from {first:.3g} after the embedding to {last:.3g}" in view.caption
    assert f"×{last / first:.2f}" in view.caption
    (one,) = build("block.stream", src, Theme(), token=9)
    np.testing.assert_allclose(one.figure.data[0].y, stream.norm[:, 9])
    assert "token 9 “because”" in one.caption


@pytest.mark.slow
def test_the_lesson_puts_pre_norm_beside_post_norm(src):
    (view,) = build("lesson.norms", src, Theme())
    assert len([t for t in view.figure.data if t.type == "scatter"]) == 2
    assert "The bundled model (pre-norm" in view.caption and "MiniLM (post-norm" in view.caption
    minilm, _ = src.stream(ModelSpec("minilm"))
    assert minilm.post_norm and not src.stream()[0].post_norm


def test_windows_keep_the_query_and_their_size():
    assert window(10, 3) == (0, 10)
    for n, q in ((100, 0), (100, 50), (100, 99)):
        a, b = window(n, q)
        assert b - a == WINDOW and a <= q < b


@pytest.mark.parametrize("which", ["src", "decoder"])
def test_every_frame_builds_with_a_caption_and_the_same_size(which, request):
    source = request.getfixturevalue(which)
    obs = source.full()
    query = min(9, obs.n_tokens - 1)
    frames = [build("anim.frame", source, Theme(), layer=1, head=1, query=query, step=s)[0] for s in range(len(STEPS))]
    for s, view in enumerate(frames):
        assert view.title.startswith(f"Step {s + 1}/{len(STEPS)}"), view.title
        assert view.caption and "nan" not in view.caption
        assert view.figure.layout.height == frames[0].figure.layout.height
        assert view.figure.layout.meta["width"] == frames[0].figure.layout.meta["width"]
    steps, _ = source.steps(1, 1)
    softmax = frames[STEPS.index("softmax")].figure.data[0]
    a, b = window(obs.n_tokens, query)
    np.testing.assert_allclose(softmax.y, steps.pattern[query][a:b], rtol=1e-6)
    np.testing.assert_allclose(steps.pattern[query], obs.patterns[1, 1, query], atol=1e-5)
    assert "It matches the model's own forward pass to" in frames[-1].caption
    err = float(frames[-1].caption.rsplit("to ", 1)[1].rstrip("."))
    assert err < 1e-4
    if which == "decoder":  # a causal model masks every key after the query (or nothing for the last one)
        assert "−∞" in frames[STEPS.index("mask")].caption or query == obs.n_tokens - 1
        assert len(softmax.x) == WINDOW  # a 30-token text is windowed


def test_the_animation_files_hold_every_frame():
    from PIL import Image

    def png(colour, size=(64, 48)):
        buf = io.BytesIO()
        Image.new("RGB", size, colour).save(buf, "PNG")
        return buf.getvalue()

    frames = [png("red"), png("green", (60, 40)), png("blue")]
    g = gif(frames, seconds=0.5)
    image = Image.open(io.BytesIO(g))
    assert image.n_frames == 3 and image.size == (64, 48)
    assert image.info["duration"] == 500
    m = mp4(frames, seconds=0.5)
    assert m[4:8] == b"ftyp" and len(m) > 500
    names = zipfile.ZipFile(io.BytesIO(png_zip(frames, "head"))).namelist()
    assert names == ["head_01.png", "head_02.png", "head_03.png"]


@pytest.mark.slow
def test_the_gallery_finds_minilms_it_to_animal_head_from_the_focus():
    """The content kind: with “it” → “animal” in focus, MiniLM's L3H1 (Find heads' best for that pair, not a
    column pattern) gets the row "“it” → “animal”"."""
    minilm = DirectSource.for_text(ModelSpec("minilm"), TEXT)
    tokens = minilm.obs.tokens
    (view,) = build("heads.gallery", minilm, Theme(), query=tokens.index("it"), key=tokens.index("animal"))
    rows = list(view.figure.layout.yaxis.ticktext)
    assert any(r.startswith("“it” → “animal”") for r in rows), rows
    assert "linking “it” → “animal” (strongest L3H1" in view.caption
