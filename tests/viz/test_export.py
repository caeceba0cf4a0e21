"""Export packs, static images, standalone HTML, session files and the CLI."""

from __future__ import annotations

import html
import io
import json
import struct
import subprocess
import sys
import xml.etree.ElementTree as ET
import zipfile
from pathlib import Path

import numpy as np
import plotly.graph_objects as go
import pytest

from model.io.catalog import ModelSpec, load
from model.observe import observe
from viz.export import cli, offline, pack, render
from viz.export.data import read_long_csv, read_matrix_csv
from viz.figures import Theme, attention_heatmap
from viz.session import dump_session, load_session
from viz.views import build
from viz.views.source import DirectSource

ROOT = Path(__file__).resolve().parents[2]
needs_chromium = pytest.mark.skipif(
    not render.image_export_available() and not __import__("os").environ.get("CI"),
    reason="no chromium here (CI installs it)",
)


@pytest.fixture(scope="module")
def obs():
    m = load(ModelSpec("bundled"))
    return observe(m.model, m.tokenizer, "The cat sat on the mat.")


def png_size(data: bytes) -> tuple[int, int]:
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    return struct.unpack(">II", data[16:24])


@pytest.fixture(scope="module")
def src(obs):
    return DirectSource(ModelSpec("bundled"), load(ModelSpec("bundled")), obs)


@needs_chromium
@pytest.mark.slow
def test_pack_contents(src, obs):
    views = build("attention", src, Theme(), layer=0, head=0)
    seen = []
    data, notes = pack.build_pack(
        views, obs, {"model": "bundled", "text": obs.text, "page": "Attention"}, progress=lambda f, m: seen.append(f)
    )
    assert not notes and seen[-1] == 1.0 and seen == sorted(seen)
    zf = zipfile.ZipFile(io.BytesIO(data))
    names = set(zf.namelist())
    stem = f"figures/00_{views[0].name}"
    assert {"README.md", "data/captured.npz", "data/tokens.csv", "data/attention.csv", "figures/page.html"} <= names
    assert {f"{stem}.png", f"{stem}.svg", f"{stem}.html", "figures/plotly.js"} <= names
    assert not [n for n in names if n.startswith("data/matrices/")]  # per-head matrices only when asked
    w, h = png_size(zf.read(f"{stem}.png"))
    assert w >= 1600 and h >= 1000  # scale >= 2
    svg = zf.read(f"{stem}.svg")
    assert ET.fromstring(svg).tag.endswith("svg") and b"Layer 0, head 0" in svg  # the title travels with the image
    # the library ships once; every HTML file references it instead of embedding 1.5 MB each
    assert zf.read("figures/plotly.js").decode() == offline.library()
    for html_name in (f"{stem}.html", "figures/page.html"):
        page = zf.read(html_name).decode()
        assert "src='plotly.js'" in page and len(page) < 200_000
    # the tidy CSV round-trips to the captured arrays, every head (short text)
    rows = read_long_csv(zf.read("data/attention.csv").decode())
    n = obs.n_tokens
    assert len(rows) == obs.n_layers * obs.n_heads * n * n
    weights = np.zeros(obs.patterns.shape)
    expected_scores = np.stack([[obs.score_matrix(lay, h) for h in range(obs.n_heads)] for lay in range(obs.n_layers)])
    scores = np.zeros(expected_scores.shape)
    for r in rows:
        weights[r["layer"], r["head"], r["query_index"], r["key_index"]] = r["weight"]
        scores[r["layer"], r["head"], r["query_index"], r["key_index"]] = r["score"]
        assert r["query_token"] == obs.tokens[r["query_index"]] and r["key_token"] == obs.tokens[r["key_index"]]
    np.testing.assert_array_equal(weights, obs.patterns.astype(np.float64))
    np.testing.assert_array_equal(scores, expected_scores.astype(np.float64))
    npz = np.load(io.BytesIO(zf.read("data/captured.npz")))
    assert {"patterns", "q", "k", "v", "z", "attn_in", "attn_out", "hidden", "ids", "metric_entropy"} <= set(npz.files)
    np.testing.assert_array_equal(npz["patterns"], obs.patterns)
    readme = zf.read("README.md").decode()
    assert "bundled" in readme and "The cat sat on the mat." in readme and "every head" in readme


@needs_chromium
@pytest.mark.slow
def test_pack_at_slide_size_with_matrices(src, obs):
    views = build("mean", src, Theme(presentation=True), layer=1)
    data, _ = pack.build_pack(views, obs, {}, size="slide", matrices=True)
    zf = zipfile.ZipFile(io.BytesIO(data))
    assert png_size(zf.read(f"figures/00_{views[0].name}_slide.png")) == (1920, 1080)
    m, rows, cols = read_matrix_csv(zf.read("data/matrices/weights_L1_H2.csv").decode())
    np.testing.assert_array_equal(m, obs.patterns[1, 2].astype(np.float64))
    assert rows == cols == obs.tokens


@pytest.mark.slow
def test_pack_without_chromium_still_has_data_and_html(src, obs, monkeypatch):
    monkeypatch.setattr(render, "find_browser", lambda: None)
    views = [*build("mean", src, Theme(), layer=1), *build("masks.change", src, Theme())]
    data, notes = pack.build_pack(views, obs, {"model": "m", "text": "t", "page": "p"})
    assert notes and "apt-get install chromium" in notes[0]
    zf = zipfile.ZipFile(io.BytesIO(data))
    names = zf.namelist()
    caption = views[1].caption  # a computed caption travels with its figure (README and page.html)
    assert caption.startswith("Largest change") and caption in zf.read("README.md").decode()
    assert html.escape(caption) in zf.read("figures/page.html").decode()
    assert "figures/page.html" in names and "data/captured.npz" in names and "figures/plotly.js" in names
    assert not [n for n in names if n.endswith((".png", ".svg"))]
    with pytest.raises(RuntimeError, match="apt-get install chromium"):
        render.render_image(views[0].figure, "png")


@pytest.mark.slow
def test_long_texts_export_the_selected_head_only(monkeypatch):
    m = load(ModelSpec("bundled"))
    long = observe(m.model, m.tokenizer, "word " * 100)
    monkeypatch.setattr(render, "find_browser", lambda: None)
    data, _ = pack.build_pack([], long, {}, layer=1, head=3)
    rows = read_long_csv(zipfile.ZipFile(io.BytesIO(data)).read("data/attention.csv").decode())
    assert {(r["layer"], r["head"]) for r in rows} == {(1, 3)} and len(rows) == long.n_tokens**2


def test_html_is_offline_and_escapes_hostile_tokens():
    fig = attention_heatmap(
        np.eye(2), ["<script>alert(1)</script>", "<img src=x onerror=alert(2)>"], title="<script>bad()</script>"
    )
    page = offline.figure_html(fig, title="<b>t</b>")
    assert "<script>alert(1)" not in page and "<img src=x" not in page and "<script>bad()" not in page
    assert "&lt;script&gt;alert(1)" in page or "\\u003cscript" in page
    assert "<scriptsrc=" not in page.replace(" ", "").replace("'", '"')  # nothing fetched: plotly.js is inlined
    assert 1_400_000 < len(page) < 2_000_000 and "plotly.js (cartesian" in page  # the small bundle, once
    assert "<title>&lt;b&gt;t&lt;/b&gt;</title>" in page
    with pytest.raises(ValueError, match=r"not in the offline plotly\.js bundle"):
        offline.figure_html(go.Figure(go.Sankey()))


def test_session_round_trip():
    state = {
        "model_kind": "random",
        "rand_layers": 3,
        "text": "héllo <b>",
        "layer": 2,
        "head": 1,
        "presentation": True,
        "causal_override": "on",
        "hv_threshold": 0.2,
        "irrelevant": object(),
    }
    text = dump_session(state, "attention")
    settings, page, notes = load_session(text)
    assert page == "attention" and not notes
    assert settings == {k: v for k, v in state.items() if k != "irrelevant"}


@pytest.mark.parametrize(
    "payload, message",
    [
        ("not json", "the session file is not valid JSON"),
        (json.dumps({"format": "x"}), "not an Attention Lab session"),
        (json.dumps([1, 2]), "not an Attention Lab session"),
    ],
)
def test_bad_session_files(payload, message):
    with pytest.raises(ValueError, match=message):
        load_session(payload)


def test_session_values_are_validated():
    raw = json.dumps(
        {
            "format": "attention-lab-session/1",
            "page": "x",
            "settings": {"layer": "3", "model_kind": "evil", "text": "x" * 300_000, "surprise": 1, "hide_special": 1},
        }
    )
    settings, _, notes = load_session(raw)
    assert "layer" not in settings and "model_kind" not in settings and "hide_special" not in settings
    assert len(settings["text"]) == 200_000
    assert len(notes) == 5


@pytest.mark.slow  # four CLI runs with image export: 4 s
@needs_chromium
def test_cli_writes_views_a_pack_and_refuses_a_bad_layer(tmp_path, capsys):
    out = tmp_path / "fig.svg"
    args = ["--model", "bundled", "--text", "The cat sat.", "--view", "heatmap", "--layer", "1", "--head", "2"]
    assert cli.main([*args, "--format", "svg", "--out", str(out)]) == 0
    root = ET.fromstring(out.read_bytes())
    assert root.tag.endswith("svg") and b"Layer 1, head 2" in out.read_bytes()
    # a view of several figures writes one file per figure; --set reaches any setting of a view
    slide = tmp_path / "q.png"
    view = ["--view", "compare.heads", "--set", "layer_b=1", "--size", "slide", "--out", str(slide)]
    assert cli.main(["--text", "The cat sat.", *view]) == 0
    for part in ("AB", "diff"):
        assert png_size((tmp_path / f"q_{part}.png").read_bytes()) == (1920, 1080)
    zip_path = tmp_path / "p.zip"
    assert cli.main(["--text", "One two three.", "--pack", str(zip_path), "--presentation"]) == 0
    names = zipfile.ZipFile(zip_path).namelist()
    assert sum(n.endswith(".png") for n in names) == len(cli.DEFAULT_PACK)
    capsys.readouterr()
    assert cli.main(["--text", "x", "--layer", "9", "--out", str(tmp_path / "x.png")]) == 2
    assert "no layer 9" in capsys.readouterr().err
    assert (
        cli.main(["--text", "x", "--view", "attention", "--set", "colour=red", "--out", str(tmp_path / "x.png")]) == 2
    )
    assert "has no setting 'colour'" in capsys.readouterr().err
    assert cli.main(["--list"]) == 0 and "qkv.query" in capsys.readouterr().out


def test_cli_html_needs_no_browser(tmp_path, monkeypatch):
    monkeypatch.setattr(render, "find_browser", lambda: None)
    out = tmp_path / "fig.html"
    assert cli.main(["--text", "The cat sat.", "--view", "mean", "--out", str(out)]) == 0
    assert "plotly.js (cartesian" in out.read_text(encoding="utf-8")


@pytest.mark.slow
def test_cli_runs_as_a_module(tmp_path):
    """One real ``python -m viz.export`` process: the entry point works outside pytest."""
    out = tmp_path / "fig.html"
    run = subprocess.run(
        [sys.executable, "-m", "viz.export", "--text", "The cat sat.", "--format", "html", "--out", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert run.returncode == 0, run.stderr
    assert "wrote" in run.stdout and "plotly.js (cartesian" in out.read_text(encoding="utf-8")


@needs_chromium
@pytest.mark.slow
def test_renderer_warms_up_once_in_the_background(obs):
    thread = render.warm_up_renderer()
    if thread is not None:  # another test may have started the server already
        thread.join(120)
        assert not thread.is_alive()
    assert render._renderer is not None
    assert render.warm_up_renderer() is None  # idempotent: no second thread, no second server
    svg = render.render_image(attention_heatmap(obs.patterns[0][0], obs.tokens), "svg")
    assert svg.lstrip().startswith(b"<svg")


@needs_chromium
@pytest.mark.slow
def test_the_render_page_is_loaded_again_every_few_images_and_after_a_failure(obs, monkeypatch):
    """Kaleido reloads its page after every image; ours every RELOAD_EVERY images and after a failed one, and
    the bytes are the same whichever image of a cycle a figure is (PNG byte for byte; SVG but for plotly's random
    element ids), also right after a failure."""
    import re

    monkeypatch.setattr(render, "RELOAD_EVERY", 3)
    heat = attention_heatmap(obs.patterns[0][0], obs.tokens)
    line = go.Figure(go.Scatter(x=[0, 1, 2], y=[2, 0, 1], name="a line"), layout={"title": {"text": "after"}})
    first = render.render_image(heat, "png", scale=1)
    kaleido = render._renderer.kaleido
    reloads = []
    tab_reload = type(kaleido.tabs_ready._queue[0]).reload

    async def counted(tab):
        reloads.append(kaleido.renders)
        await tab_reload(tab)

    monkeypatch.setattr(type(kaleido.tabs_ready._queue[0]), "reload", counted)
    start = kaleido.renders
    pngs = [render.render_image(fig, "png", scale=1) for fig in (heat, line) * 4]
    assert kaleido.renders == start + 8
    assert reloads == [r for r in range(start + 1, start + 9) if r % 3 == 0]  # every third image, no other
    assert all(p == first for p in pngs[::2]) and len(set(pngs[1::2])) == 1 and pngs[1] != first

    def svg(fig) -> str:  # plotly's random ids: the plot's, each colour bar's, each trace's
        text = render.render_image(fig, "svg").decode()
        text = text.replace(re.search(r"defs-([0-9a-f]{6})", text).group(1), "ID")
        return re.sub(r"(cb|trace)[0-9a-f]{6}", r"\1ID", text)

    heat_svg = svg(heat)
    with pytest.raises(ValueError, match="Invalid format"):  # kaleido's own error
        render._renderer.render(heat, {"format": "bogus", "width": 400, "height": 400})
    assert kaleido.reload_next  # the failed image's page is loaded again before the next image
    reloads.clear()
    assert svg(heat) == heat_svg and reloads and not kaleido.reload_next
    assert render.render_image(line, "png", scale=1) == pngs[1]


def test_no_renderer_without_a_browser(monkeypatch):
    monkeypatch.setattr(render, "find_browser", lambda: None)
    monkeypatch.setattr(render, "_renderer", None)
    monkeypatch.setattr(render, "_warm_up_thread", None)
    assert render.warm_up_renderer() is None


class _Clock:
    """A clock the test moves by hand, for the renderer's warm-up thread: its ``sleep`` returns when the test has
    moved the clock past the end, so the test does not depend on how fast the machine runs (CI's is busy)."""

    def __init__(self):
        self.now = 1000.0
        self.asleep_until: float | None = None  # the thread's wake-up time while it sleeps
        self.cond = __import__("threading").Condition()

    def monotonic(self) -> float:
        with self.cond:
            return self.now

    def sleep(self, seconds: float) -> None:
        with self.cond:
            self.asleep_until = self.now + seconds
            self.cond.notify_all()
            assert self.cond.wait_for(lambda: self.now >= self.asleep_until, timeout=10)
            self.asleep_until = None
            self.cond.notify_all()

    def advance(self, seconds: float, thread) -> None:
        """Move on, then wait until the thread sleeps again (into the future) or has ended."""
        with self.cond:
            self.now += seconds
            self.cond.notify_all()
        with self.cond:
            assert self.cond.wait_for(
                lambda: not thread.is_alive() or (self.asleep_until is not None and self.asleep_until > self.now),
                timeout=10,
            )


def test_the_renderer_warms_up_only_after_the_runs_go_quiet(monkeypatch):
    """The background start waits until no script run has started or ended for ``quiet`` seconds: a class
    opening the app together does not share the server's cores with a browser starting."""
    clock = _Clock()
    started = []
    monkeypatch.setattr(render, "time", clock)
    monkeypatch.setattr(render, "image_export_available", lambda: True)
    monkeypatch.setattr(render, "_renderer", None)
    monkeypatch.setattr(render, "_warm_up_thread", None)
    monkeypatch.setattr(render, "_start_renderer_locked", lambda: started.append(clock.now))
    thread = render.warm_up_renderer(delay=0.0, quiet=0.2)
    with clock.cond:  # the thread has begun waiting out the quiet
        assert clock.cond.wait_for(lambda: clock.asleep_until is not None, timeout=10)
    for _ in range(3):  # runs keep starting and ending: a run every 0.15 s never leaves 0.2 s quiet
        clock.advance(0.15, thread)
        assert not started
        render.note_activity()
    last = clock.now
    clock.advance(0.15, thread)
    assert not started  # 0.15 s of quiet is not enough
    clock.advance(0.1, thread)
    thread.join(10)
    assert len(started) == 1 and started[0] - last >= 0.2 - 1e-9


def test_the_renderer_does_not_warm_up_while_a_background_run_works(monkeypatch):
    """A long text's pass runs no script for seconds: the runs look quiet, but the browser's start would take two
    of its seconds; the warm-up waits until ``busy()`` is false."""
    clock = _Clock()
    started, working = [], [True]
    monkeypatch.setattr(render, "time", clock)
    monkeypatch.setattr(render, "image_export_available", lambda: True)
    monkeypatch.setattr(render, "_renderer", None)
    monkeypatch.setattr(render, "_warm_up_thread", None)
    monkeypatch.setattr(render, "_start_renderer_locked", lambda: started.append(clock.now))
    thread = render.warm_up_renderer(delay=0.0, quiet=0.2, busy=lambda: working[0])
    with clock.cond:
        assert clock.cond.wait_for(lambda: clock.asleep_until is not None, timeout=10)
    for _ in range(5):  # quiet for seconds, but the run works
        clock.advance(render.BUSY_POLL_S, thread)
        assert not started
    working[0] = False
    clock.advance(render.BUSY_POLL_S, thread)
    thread.join(10)
    assert len(started) == 1
