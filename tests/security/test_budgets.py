"""Nothing a user hands the lab is parsed before it is measured: a zip's members, a folder's config.json and
tokenizer files, a session file and a deck link each have a byte budget, a bound on their arrays and objects and on
their nesting, and a value from a link or a session file is clamped to its widget's range or dropped, never passed
on as NaN — each refusal in plain words, in seconds, naming only what the user gave."""

from __future__ import annotations

import io
import json
import math
import re
import shutil
import time
import tracemalloc
import zipfile

import pytest

from model.errors import CheckpointError
from model.io.archive import unpacked
from model.io.budget import LIMITS, parse_json
from model.io.checkpoint import load_checkpoint
from tests.hf_fixtures import FIXTURES
from viz.session import FORMAT, load_session
from viz.settings import BY_KEY


def _zip(members: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as z:
        for name, data in members.items():
            z.writestr(name, data)
    return buf.getvalue()


def test_a_config_json_bomb_is_refused_before_it_is_unpacked():
    """2 MB of spaces as config.json (the issue's was 2 GB: refused the same way, by its declared size)."""
    data = _zip({"m/config.json": b" " * (2 * LIMITS["config.json"]), "m/model.safetensors": b"x"})
    t0 = time.perf_counter()
    with pytest.raises(CheckpointError, match=r"the \.zip's config\.json is 2 MB, more than the 1 MB"):
        with unpacked(data):
            pass
    assert time.perf_counter() - t0 < 1.0


def test_a_weights_bomb_is_refused_by_its_ratio():
    data = _zip({"m/config.json": b"{}", "m/model.safetensors": bytes(64 * 2**20)})  # 64 MB of zeros, packs to 64 KB
    assert len(data) < 2**20
    with pytest.raises(CheckpointError, match="no model file compresses 100 times"):
        with unpacked(data):
            pass


def test_a_real_folder_still_unpacks(tmp_path):
    folder = FIXTURES / "llama"
    data = _zip({f"llama/{p.name}": p.read_bytes() for p in folder.iterdir() if p.is_file()})
    with unpacked(data) as root:
        assert (root / "config.json").is_file() and load_checkpoint(root).model.cfg.n_layers > 0


def test_a_folders_config_json_is_measured_before_it_is_read(tmp_path):
    shutil.copytree(FIXTURES / "llama", tmp_path / "m")
    (tmp_path / "m" / "config.json").write_bytes(b"[" * 50_000 + b"]" * 50_000)
    with pytest.raises(CheckpointError, match=r"config\.json is nested deeper") as err:
        load_checkpoint(tmp_path / "m")
    assert str(tmp_path) not in str(err.value)  # the refusal names the file, never the server's folder
    (tmp_path / "m" / "config.json").write_bytes(b" " * (LIMITS["config.json"] + 1))
    with pytest.raises(CheckpointError, match=r"config\.json is 1 MB, more than the 1 MB"):
        load_checkpoint(tmp_path / "m")


def test_nesting_and_counts_are_refused_without_a_recursion_error():
    with pytest.raises(ValueError, match="nested deeper than any real one"):
        parse_json(b"[" * 5_000 + b"]" * 5_000, "the link's deck")
    with pytest.raises(ValueError, match="arrays and objects"):
        parse_json(b'{"settings": {"text": [' + b"[]," * 2_000_000 + b"[]]}}", "the session file", "session")


def test_a_session_file_bomb_is_refused_in_a_second_without_the_memory():
    """The issue's 60 MB of empty lists took +1.26 GB and 47 s to parse: counted on the bytes instead."""
    bomb = b'{"format": "' + FORMAT.encode() + b'", "settings": {"text": [' + b"[]," * 20_000_000 + b"[]]}}"
    tracemalloc.start()
    t0 = time.perf_counter()
    with pytest.raises(ValueError, match="arrays and objects"):
        load_session(bomb)
    took, (_, peak) = time.perf_counter() - t0, tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert took < 2.0 and peak < 16 * 2**20, (took, peak)
    deep = '{"format": "' + FORMAT + '", "settings": {}, "deck": ' + "[" * 60_000 + "]" * 60_000 + "}"
    with pytest.raises(ValueError, match="nested deeper"):
        load_session(deep)


def test_duplicate_deck_ids_and_remote_images_are_cleaned_on_the_way_in():
    import plotly.graph_objects as go

    fig = go.Figure(go.Scatter(y=[1, 2]))
    fig.add_layout_image(source="https://example.com/track.png", x=0, y=0)
    fig.add_layout_image(source="data:image/png;base64,iVBORw0KGgo=", x=0, y=0)
    item = {k: "x" for k in ("key", "title", "caption", "source")} | {"slide": fig.to_json(), "figure": fig.to_json()}
    deck = [item | {"id": "abc123"}, item | {"id": "abc123"}, item | {"id": "<script>"}]
    settings, _, _ = load_session(json.dumps({"format": FORMAT, "settings": {}, "deck": deck}))
    ids = [i["id"] for i in settings["deck"]]
    assert len(set(ids)) == 3 and ids[0] == "abc123" and all(i.isalnum() for i in ids)
    for i in settings["deck"]:
        for part in ("slide", "figure"):
            sources = [im["source"] for im in json.loads(i[part])["layout"].get("images", [])]
            assert sources == ["data:image/png;base64,iVBORw0KGgo="], sources


@pytest.mark.parametrize(
    ("key", "text", "value", "said"),
    [
        ("ind_period", "1000000", 64, "was outside 8–64: 64 is used"),
        ("next_temperature", "0", 0.1, "outside 0.1–2"),
        ("gen_n", "-5", None, "out of range"),
        ("hv_threshold", "nan", None, "not a finite number"),
        ("next_temperature", "inf", None, "not a finite number"),
        ("ind_period", "twelve", None, "is not a int"),
    ],
)
def test_a_links_numbers_are_clamped_to_their_widget_or_dropped(key, text, value, said):
    setting = BY_KEY[key]
    if value is None:
        with pytest.raises(ValueError, match=said):
            setting.from_url(text)
        return
    clean, note = setting.from_url(text)
    assert clean == value and said in note and math.isfinite(clean)


def test_refusals_name_what_the_user_gave_not_the_servers_folders(tmp_path):
    """An uploaded .zip is unpacked in a temporary folder: a refusal says "the folder", never that path; a file
    that is not a model says so without numbers read from its bytes or its size."""
    from model.io.catalog import ModelSpec, digest, load

    data = _zip({"m/config.json": b"{}", "m/notes.txt": b"not weights"})
    with pytest.raises(CheckpointError) as err:
        load(ModelSpec("upload", digest=digest(data), name="m.zip"), data)
    assert "/tmp" not in str(err.value) and "attention-lab-" not in str(err.value), err.value
    secret = tmp_path / "secret.safetensors"
    secret.write_bytes(b"password=hunter2\n" * 40)
    with pytest.raises(CheckpointError) as err:
        load_checkpoint(secret)
    said = str(err.value)
    assert "hunter2" not in said and not re.search(r"\d{3,}|\d,\d", said), said  # no number read from the bytes
    deep = tmp_path / "deep.safetensors"
    header = b"[" * 100_000 + b"]" * 100_000
    deep.write_bytes(len(header).to_bytes(8, "little") + header)
    with pytest.raises(CheckpointError, match="header is not valid JSON"):
        load_checkpoint(deep)
