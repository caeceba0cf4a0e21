"""A Hugging Face folder uploaded as one .zip loads like the folder; entries that point outside, links and
archives that unpack too far are refused before anything is written."""

from __future__ import annotations

import io
import stat
import zipfile

import pytest
from safetensors.torch import load_file

import model.io.archive as archive
from model.capture import run_with_cache
from model.errors import CheckpointError
from model.io.catalog import ModelSpec, digest, load
from model.io.checkpoint import load_bytes, upload_questions
from tests.hf_fixtures import FIXTURES, zipped


@pytest.mark.parametrize("top", ["", "gpt2/"])
def test_a_zipped_folder_loads_and_matches_transformers(top):
    data = zipped(FIXTURES / "gpt2", top)  # sharded weights and their index, in the zip's root or a folder
    loaded = load(ModelSpec("upload", digest=digest(data), name="gpt2.zip"), data)
    ref = load_file(str(FIXTURES / "gpt2" / "reference.safetensors"))
    ids = ref["short.ids"]
    _, trace = run_with_cache(loaded.model, ids[None], kinds=["pattern"])
    assert (trace.stack("pattern")[:, 0] - ref["short.attentions"]).abs().max() <= 1e-5
    assert loaded.info["model_type"] == "gpt2" and upload_questions(data, "gpt2.zip").head_choices == ()


def _zip(entries: list[tuple[zipfile.ZipInfo | str, bytes]]) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for info, payload in entries:
            zf.writestr(info, payload)
    return buf.getvalue()


def test_entries_outside_the_folder_and_links_are_refused(tmp_path):
    for name in ("../evil.txt", "/etc/evil", "a/../../evil"):
        with pytest.raises(CheckpointError, match="points outside its folder"):
            load_bytes(_zip([("config.json", b"{}"), (name, b"x")]), "m.zip")
    link = zipfile.ZipInfo("config.json")
    link.external_attr = (stat.S_IFLNK | 0o777) << 16
    with pytest.raises(CheckpointError, match="points outside its folder"):
        load_bytes(_zip([(link, b"/etc/passwd")]), "m.zip")
    assert not (tmp_path.parent / "evil.txt").exists()


def test_bombs_and_junk_are_refused(monkeypatch):
    monkeypatch.setattr(archive, "MAX_UNPACKED", 1000)
    with pytest.raises(CheckpointError, match="unpacks to more than"):
        load_bytes(_zip([("config.json", b"{}"), ("big.bin", b"\0" * 5000)]), "m.zip")
    with pytest.raises(CheckpointError, match="cannot be read"):
        load_bytes(b"PK\x03\x04 not really", "m.zip")
