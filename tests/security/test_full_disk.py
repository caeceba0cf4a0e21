"""A full disk (issue 48): whatever was kept before stays whole, nothing half-written is left behind, the page says
so in plain words without the server's paths, and a training run goes on in memory when its live file cannot be
rewritten."""

from __future__ import annotations

import errno

import pandas as pd
import pytest

from model.learn.loop import TrainSpec
from model.profile.store import read_profile, write_profile
from viz.shell import jobs, training

FULL = OSError(errno.ENOSPC, "No space left on device", "/srv/attention-lab/runs/.partial-x")


def full_disk(*args, **kwargs):
    raise FULL


def test_a_full_disk_keeps_the_previous_corpus_profile_whole(tmp_path, monkeypatch):
    path = tmp_path / "bundled__sample"
    heads = pd.DataFrame({"doc": [0], "layer": [0], "head": [0], "previous": [0.5]})
    docs = pd.DataFrame({"doc": [0], "text": ["a b"], "n_tokens": [2]})
    write_profile(path, heads, docs, {"corpus": "sample"})
    monkeypatch.setattr(pd.DataFrame, "to_parquet", full_disk)
    with pytest.raises(OSError) as caught:
        write_profile(path, heads.assign(previous=[0.9]), docs, {"corpus": "sample"})
    kept = read_profile(path)
    assert kept is not None and kept.heads["previous"].tolist() == [0.5]  # the old one, whole
    assert [p.name for p in tmp_path.iterdir()] == ["bundled__sample"]  # no half-written folder
    said = jobs.plain_error(caught.value)
    assert "disk is full" in said and "unchanged" in said and "/srv" not in said and "partial" not in said


def test_other_file_errors_never_show_the_servers_paths():
    said = jobs.plain_error(PermissionError(errno.EACCES, "Permission denied", "/srv/attention-lab/runs/x"))
    assert "Permission denied" in said and "/srv" not in said
    assert jobs.plain_error(ValueError("bad text")) == "ValueError: bad text"


@pytest.mark.slow
def test_a_run_trains_on_when_its_live_file_cannot_be_written_and_says_why_it_was_not_kept(tmp_path, monkeypatch):
    monkeypatch.setenv("ATTENTION_LAB_RUNS", str(tmp_path))
    monkeypatch.setattr(training, "REST", 0.0)
    monkeypatch.setattr(training, "LIVE_EVERY", 0.0)  # the live file is rewritten at every snapshot
    monkeypatch.setattr(training, "write", full_disk)
    spec = TrainSpec(n_layers=1, n_heads=2, d_model=16, steps=60, snapshot_every=10, batch=8, seed=11)
    job = training.start_training(spec)
    job.thread.join(60)
    assert job.finished and job.result is None  # trained to its end, then could not be kept
    assert "disk is full" in job.error and "/srv" not in job.error
    assert job.done == spec.steps  # the live file's failures did not stop it
    assert not [p for p in tmp_path.iterdir() if p.suffix == ".safetensors"]


def test_session_files_and_html_decks_are_made_in_memory_so_a_full_disk_cannot_touch_them(monkeypatch):
    """Saving a session and exporting the HTML deck write nothing on the server: the browser downloads bytes made
    in memory, so with every way of writing a file failing they still come out whole."""
    import builtins
    import os
    import tempfile
    from pathlib import Path

    from viz.export.deck import deck_html
    from viz.session import dump_session, load_session

    real_open = builtins.open

    def no_writes(file, mode="r", *args, **kwargs):
        if any(m in mode for m in "wax+"):
            raise FULL
        return real_open(file, mode, *args, **kwargs)

    monkeypatch.setattr(builtins, "open", no_writes)
    monkeypatch.setattr(os, "open", full_disk)
    monkeypatch.setattr(tempfile, "mkstemp", full_disk)
    monkeypatch.setattr(Path, "write_bytes", full_disk)
    monkeypatch.setattr(Path, "write_text", full_disk)
    state = {"text": "The animal didn't cross the street.", "layer": 1, "head": 2, "deck": []}
    data = dump_session(state, "attention")
    settings, page, _ = load_session(data)
    assert settings["text"] == state["text"] and page == "attention"
    assert "<html" in deck_html([], title="Attention from scratch")
