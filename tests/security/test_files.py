"""Broken and malicious checkpoints through every load path: upload, local path, CLI, and the UI."""

from __future__ import annotations

from pathlib import Path

import pytest

from model.errors import CheckpointError
from model.io.catalog import ModelSpec, digest, load
from tests.app.conftest import figures, new_app
from tests.security.files import MARKER_NAME, broken_files
from viz.export import cli

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("broken")
    return tmp, broken_files(tmp)


def test_there_are_at_least_ten(files):
    assert len(files[1]) >= 10


def _check(load_call, message):
    if message is None:
        with pytest.warns(UserWarning, match="NaN or Inf"):
            loaded = load_call()
        assert loaded.warnings
        return
    with pytest.raises(CheckpointError, match=message):
        load_call()


def test_load_errors_are_our_own_and_never_advise_turning_safety_off(files):
    """PyTorch's message for a refused file suggests weights_only=False; ours says what is wrong and what works."""
    _, cases = files
    for fname, data, message in cases.values():
        if message is None:
            continue
        spec = ModelSpec("upload", digest=digest(data), name=fname)
        with pytest.raises(CheckpointError) as err:
            load(spec, data)
        text = str(err.value)
        assert "weights_only" not in text and "False" not in text, (fname, text)
        if fname.endswith(".pt"):
            assert "'state_dict'" in text, (fname, text)  # says what a .pt must hold


def test_upload_path(files):
    tmp, cases = files
    for fname, data, message in cases.values():
        spec = ModelSpec("upload", digest=digest(data), name=fname)
        _check(lambda s=spec, d=data: load(s, d), message)
    assert not (tmp / MARKER_NAME).exists(), "the pickle ran code"


def test_local_path(files):
    tmp, cases = files
    for fname, data, message in cases.values():
        path = tmp / fname
        path.write_bytes(data)
        _check(lambda p=path: load(ModelSpec("folder", path=str(p))), message)
    assert not (tmp / MARKER_NAME).exists()


@pytest.mark.slow
def test_cli_path(files, capsys):
    tmp, cases = files
    for name, (fname, data, message) in cases.items():
        path = tmp / f"cli_{fname}"
        path.write_bytes(data)
        code = cli.main(["--model", str(path), "--text", "hello", "--out", str(tmp / "o.html"), "--format", "html"])
        err = capsys.readouterr().err
        if message is None:
            assert code == 0, (name, err)
        else:
            assert code == 2 and message in err, (name, err)
            assert "Traceback" not in err
    assert not (tmp / MARKER_NAME).exists()


@pytest.mark.slow
def test_ui_keeps_previous_model_text_and_settings(files):
    tmp, cases = files
    at = new_app()
    at.sidebar.text_area(key="text").set_value("My lesson sentence stays.").run()
    at.selectbox(key="layer").set_value(1).run()
    at.sidebar.selectbox(key="model_kind").set_value("upload").run()
    # refused files first (the previous model must survive each); the NaN file loads, so it goes last
    for name, (fname, data, message) in sorted(cases.items(), key=lambda kv: kv[1][2] is None):
        at.sidebar.file_uploader(key="upload_file").set_value((fname, data, "application/octet-stream")).run()
        assert not at.exception, name
        if message is None:
            assert any("NaN or Inf" in w.value for w in at.sidebar.warning), name
            continue
        errors = " ".join(e.value for e in at.sidebar.error)
        assert "Could not load this model" in errors and message in errors, (name, errors)
        assert at.sidebar.text_area(key="text").value == "My lesson sentence stays."
        fig = figures(at)[0]  # the page still works, on the previously loaded model
        assert "Layer 1" in fig["layout"]["title"]["text"]
        assert "sentence" in fig["data"][0]["y"]
    assert not (tmp / MARKER_NAME).exists()


def test_oversized_upload_is_refused(monkeypatch):
    import model.io.catalog as catalog

    monkeypatch.setattr(catalog, "MAX_UPLOAD_BYTES", 10)
    data = b"x" * 11
    with pytest.raises(CheckpointError, match="larger than"):
        load(ModelSpec("upload", digest=digest(data), name="big.safetensors"), data)


def test_server_limits_in_config():
    import tomllib

    from model.io.catalog import MAX_UPLOAD_BYTES

    cfg = tomllib.loads((ROOT / ".streamlit" / "config.toml").read_text())
    assert cfg["server"]["address"] == "localhost"
    assert cfg["server"]["enableXsrfProtection"] is True
    assert cfg["browser"]["gatherUsageStats"] is False
    assert cfg["server"]["maxUploadSize"] * 2**20 == MAX_UPLOAD_BYTES
