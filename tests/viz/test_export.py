"""Export packs, static images, standalone HTML, session files and the CLI."""

from __future__ import annotations

import io
import json
import struct
import subprocess
import sys
import xml.etree.ElementTree as ET
import zipfile
from pathlib import Path

import numpy as np
import pytest

from model.io.catalog import ModelSpec, load
from model.observe import observe
from viz.export import cli, offline, pack, render
from viz.export.data import read_matrix_csv
from viz.figures import attention_heatmap
from viz.session import dump_session, load_session

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


@needs_chromium
def test_pack_contents(obs):
    figs = [("heatmap L0 H0", attention_heatmap(obs.patterns[0, 0], obs.tokens, title="L0 H0"))]
    seen = []
    data, notes = pack.build_pack(
        figs,
        obs,
        {"model": "bundled", "text": obs.text, "page": "Attention"},
        progress=lambda f, m: seen.append(f),
    )
    assert not notes and seen[-1] == 1.0 and seen == sorted(seen)
    zf = zipfile.ZipFile(io.BytesIO(data))
    names = set(zf.namelist())
    assert {
        "README.md",
        "data/captured.npz",
        "data/tokens.csv",
        "figures/page.html",
        "figures/00_heatmap-L0-H0.png",
        "figures/00_heatmap-L0-H0.svg",
    } <= names
    w, h = png_size(zf.read("figures/00_heatmap-L0-H0.png"))
    assert w >= 1600 and h >= 1000  # scale >= 2
    svg = ET.fromstring(zf.read("figures/00_heatmap-L0-H0.svg"))
    assert svg.tag.endswith("svg")
    assert b"L0 H0" in zf.read("figures/00_heatmap-L0-H0.svg")  # the title travels with the image
    # CSVs round-trip to the captured arrays, every head (short text)
    for layer in range(obs.n_layers):
        for head in range(obs.n_heads):
            m, rows, cols = read_matrix_csv(zf.read(f"data/weights_L{layer}_H{head}.csv").decode())
            np.testing.assert_array_equal(m, obs.patterns[layer, head].astype(np.float64))
            assert rows == cols == obs.tokens
    scores, _, _ = read_matrix_csv(zf.read("data/scores_L1_H2.csv").decode())
    np.testing.assert_array_equal(scores, obs.scores[1, 2].astype(np.float64))
    npz = np.load(io.BytesIO(zf.read("data/captured.npz")))
    assert {"patterns", "scores", "q", "k", "v", "z", "attn_in", "attn_out", "hidden", "ids", "metric_entropy"} <= set(
        npz.files
    )
    np.testing.assert_array_equal(npz["patterns"], obs.patterns)
    readme = zf.read("README.md").decode()
    assert "bundled" in readme and "The cat sat on the mat." in readme and "layer 0, head 0" in readme


def test_pack_without_chromium_still_has_data_and_html(obs, monkeypatch):
    monkeypatch.setattr(render, "find_browser", lambda: None)
    figs = [("mean", attention_heatmap(obs.patterns[1].mean(0), obs.tokens))]
    data, notes = pack.build_pack(figs, obs, {"model": "m", "text": "t", "page": "p"})
    assert notes and "apt-get install chromium" in notes[0]
    names = zipfile.ZipFile(io.BytesIO(data)).namelist()
    assert "figures/page.html" in names and "data/captured.npz" in names
    assert not [n for n in names if n.endswith((".png", ".svg"))]
    with pytest.raises(RuntimeError, match="apt-get install chromium"):
        render.render_image(figs[0][1], "png")


def test_long_texts_export_the_selected_head_only(obs, monkeypatch):
    m = load(ModelSpec("bundled"))
    long = observe(m.model, m.tokenizer, "word " * 100)
    monkeypatch.setattr(render, "find_browser", lambda: None)
    data, _ = pack.build_pack([], long, {}, layer=1, head=3)
    csvs = [n for n in zipfile.ZipFile(io.BytesIO(data)).namelist() if n.endswith(".csv") and "weights" in n]
    assert csvs == ["data/weights_L1_H3.csv"]


def test_html_is_offline_and_escapes_hostile_tokens():
    fig = attention_heatmap(
        np.eye(2), ["<script>alert(1)</script>", "<img src=x onerror=alert(2)>"], title="<script>bad()</script>"
    )
    page = offline.figure_html(fig, title="<b>t</b>")
    assert "<script>alert(1)" not in page and "<img src=x" not in page and "<script>bad()" not in page
    assert "&lt;script&gt;alert(1)" in page or "\\u003cscript" in page
    assert "<scriptsrc=" not in page.replace(" ", "").replace("'", '"')  # nothing fetched: plotly.js is inlined
    assert len(page) > 3_000_000 and "Plotly" in page
    assert "<title>&lt;b&gt;t&lt;/b&gt;</title>" in page


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
        ("not json", "not a session file"),
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


@needs_chromium
def test_cli_writes_one_figure_a_pack_and_refuses_a_bad_layer(tmp_path, capsys):
    out = tmp_path / "fig.svg"
    args = ["--model", "bundled", "--text", "The cat sat.", "--view", "heatmap", "--layer", "1", "--head", "2"]
    assert cli.main([*args, "--format", "svg", "--out", str(out)]) == 0
    root = ET.fromstring(out.read_bytes())
    assert root.tag.endswith("svg") and b"layer 1, head 2" in out.read_bytes()
    zip_path = tmp_path / "p.zip"
    assert cli.main(["--text", "One two three.", "--pack", str(zip_path), "--presentation"]) == 0
    names = zipfile.ZipFile(zip_path).namelist()
    assert sum(n.endswith(".png") for n in names) == len(cli.VIEWS)
    capsys.readouterr()
    assert cli.main(["--text", "x", "--layer", "9", "--out", str(tmp_path / "x.png")]) == 2
    assert "layer/head out of range" in capsys.readouterr().err


def test_cli_html_needs_no_browser(tmp_path, monkeypatch):
    monkeypatch.setattr(render, "find_browser", lambda: None)
    out = tmp_path / "fig.html"
    assert cli.main(["--text", "The cat sat.", "--view", "mean", "--out", str(out)]) == 0
    assert "Plotly" in out.read_text(encoding="utf-8")


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
    assert "wrote" in run.stdout and "Plotly" in out.read_text(encoding="utf-8")


@needs_chromium
def test_renderer_warms_up_once_in_the_background(obs):
    thread = render.warm_up_renderer()
    if thread is not None:  # another test may have started the server already
        thread.join(120)
        assert not thread.is_alive()
    assert render._kaleido_started
    assert render.warm_up_renderer() is None  # idempotent: no second thread, no second server
    svg = render.render_image(attention_heatmap(obs.patterns[0][0], obs.tokens), "svg")
    assert svg.lstrip().startswith(b"<svg")


def test_no_renderer_without_a_browser(monkeypatch):
    monkeypatch.setattr(render, "find_browser", lambda: None)
    monkeypatch.setattr(render, "_kaleido_started", False)
    monkeypatch.setattr(render, "_warm_up_thread", None)
    assert render.warm_up_renderer() is None
