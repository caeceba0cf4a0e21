"""The export command line opens the post's state dict (--heads, --tokenizer) and its data equal the post's own
forward pass; without --heads it says what it assumed."""

from __future__ import annotations

import io
import zipfile

import numpy as np
import pytest
import torch

from model.io.catalog import BUNDLED_TOKENIZER
from model.io.tokenizer import Tokenizer
from tests.reference import post_encoder as ref
from viz.export import cli

TEXT = "The animal didn't cross the street because it was too tired."


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    folder = tmp_path_factory.mktemp("post")
    model = ref.make(seed=5)
    torch.save(model.state_dict(), folder / "encoder.pt")
    return model, folder / "encoder.pt"


@pytest.mark.slow
def test_pack_data_equal_the_posts_forward_pass(saved, tmp_path, capsys):
    model, path = saved
    out = tmp_path / "pack.zip"
    argv = ["--model", str(path), "--heads", "4", "--tokenizer", "bundled", "--text", TEXT, "--pack", str(out)]
    assert cli.main([*argv, "--view", "attention"]) == 0, capsys.readouterr().err
    with zipfile.ZipFile(out) as zf:
        arrays = np.load(io.BytesIO(zf.read("data/captured.npz")))
    ids = torch.tensor([Tokenizer.from_file(BUNDLED_TOKENIZER).encode(TEXT).ids])
    assert tuple(arrays["ids"]) == tuple(ids[0].tolist())
    hidden, patterns = ref.run(model, ids)
    assert np.abs(arrays["patterns"] - torch.stack(patterns)[:, 0].numpy()).max() <= 1e-5  # (L, H, N, N)
    assert np.abs(arrays["hidden"] - hidden[0].numpy()).max() <= 1e-4


def test_without_heads_or_tokenizer_the_command_says_so(saved, tmp_path, capsys):
    _, path = saved
    html = str(tmp_path / "a.html")
    assert cli.main(["--model", str(path), "--text", TEXT, "--out", html]) == 2
    assert "--tokenizer" in capsys.readouterr().err
    assert cli.main(["--model", str(path), "--tokenizer", "bundled", "--text", TEXT, "--out", html]) == 0
    err = capsys.readouterr().err
    assert "note: The number of heads is not stored in the weights: 8 (the post's default) is assumed" in err
    assert cli.main(["--model", str(path), "--heads", "3", "--tokenizer", "ids", "--text", "1 2", "--out", html]) == 2
    assert "3 heads do not divide d_model 64" in capsys.readouterr().err


@pytest.mark.slow
# Gemma 3 loads in 40 s: its own tests; a trained run exists only once one is trained (the next test)
@pytest.mark.parametrize("name", [n for n in cli.NAMED if n not in ("gemma3", "trained")])
def test_every_catalog_entry_by_name(name, tmp_path, capsys):
    out = tmp_path / "captured.npz"
    assert cli.main(["--model", name, "--text", "The cat sat on the mat.", "--data", str(out)]) == 0, (
        capsys.readouterr().err
    )
    assert np.load(out)["patterns"].ndim == 4


def test_the_newest_trained_run_by_name(tmp_path, monkeypatch, capsys):
    from model.learn.loop import TrainSpec, train
    from model.learn.store import write

    monkeypatch.setenv("ATTENTION_LAB_RUNS", str(tmp_path / "runs"))
    out = tmp_path / "captured.npz"
    assert cli.main(["--model", "trained", "--text", "abc abc", "--data", str(out)]) == 2
    assert "train one on the “Watch it learn” page" in capsys.readouterr().err
    write(train(TrainSpec(n_layers=1, n_heads=2, d_model=16, steps=20, batch=4)), tmp_path / "runs")
    assert cli.main(["--model", "trained", "--text", "abc abc", "--data", str(out)]) == 0, capsys.readouterr().err
    assert np.load(out)["patterns"].shape == (1, 2, 7, 7)  # [BOS] a b c a b c
