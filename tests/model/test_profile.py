"""The corpus job: per-head averages equal single-text metrics, cancelling leaves nothing behind, files are
parsed safely, the CLI writes what the dashboard reads, and Ray computes the same table."""

from __future__ import annotations

import json
import os
import re

import numpy as np
import pandas as pd
import pytest

from model.analysis.sinks import SINK_TARGETS, sink_shares
from model.io.catalog import ModelSpec, load
from model.observe import Options, observe
from model.profile.__main__ import main
from model.profile.corpus import MAX_CORPUS_BYTES, CorpusError, bundled_documents, corpus_hash, parse_corpus
from model.profile.job import SHARE_COLUMNS, CancelledError, head_means, profile_corpus, top_documents
from model.profile.run import run_profile
from model.profile.store import profile_dir, read_profile

DOCS = bundled_documents()[::120][:10]  # every source, short and long


@pytest.fixture(scope="module")
def bundled():
    return load(ModelSpec("bundled"))


@pytest.mark.slow
def test_corpus_averages_equal_the_mean_of_single_text_metrics(bundled):
    frame = profile_corpus(bundled.model, bundled.tokenizer, DOCS, max_len=128, batch_size=4)  # padded batches
    assert len(frame) == len(DOCS) * 4 * 6 and frame["doc"].nunique() == len(DOCS)
    singles = [observe(bundled.model, bundled.tokenizer, d, Options(max_len=128, kinds=("pattern",))) for d in DOCS]
    assert len({o.n_tokens for o in singles}) > 3  # the batches really were padded
    means = head_means(frame)
    for metric in ("entropy", "previous", "special", "max_weight"):
        expected = np.mean([o.metrics[metric] for o in singles], axis=0)  # (L, H)
        got = means.pivot(index="layer", columns="head", values=metric).to_numpy()
        assert np.allclose(got, expected, atol=2e-5), metric
    for target in SINK_TARGETS:
        expected = np.mean([sink_shares(o.patterns, o.tokens, o.special)[target] for o in singles], axis=0)
        got = means.pivot(index="layer", columns="head", values=SHARE_COLUMNS[target]).to_numpy()
        assert np.allclose(got, expected, atol=2e-5), target
    top = top_documents(frame, 0, 0, "previous", k=3)
    values = [float(singles[d].metrics["previous"][0, 0]) for d in top["doc"]]
    assert values == sorted(values, reverse=True) and values[0] == pytest.approx(
        max(o.metrics["previous"][0, 0] for o in singles), abs=2e-5
    )


def test_cancelling_leaves_no_profile_that_is_read_as_complete(bundled, tmp_path):
    seen = []
    with pytest.raises(CancelledError):
        run_profile(
            ModelSpec("bundled"), DOCS, tmp_path, loaded=bundled, max_len=32, batch_size=2,
            progress=lambda done, total: seen.append(done), cancel=lambda: len(seen) >= 2,
        )  # fmt: skip
    assert seen == [2, 4]
    assert list(tmp_path.iterdir()) == []  # nothing was written, not even a temporary folder
    path = profile_dir(tmp_path, bundled.name, corpus_hash(DOCS, 32))
    path.mkdir(parents=True)
    (path / "heads.parquet").write_bytes(b"half a file")  # a crash before meta.json: not complete
    assert read_profile(path) is None
    profile = run_profile(ModelSpec("bundled"), DOCS, tmp_path, loaded=bundled, max_len=32, batch_size=2)
    assert profile.path == path and read_profile(path) is not None
    assert profile.meta["documents"] == len(DOCS) and len(profile.docs) == len(DOCS)
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".tmp-")]


def test_a_write_that_fails_halfway_leaves_nothing(bundled, tmp_path, monkeypatch):
    def broken(self, *args, **kwargs):
        raise OSError("disk full")

    monkeypatch.setattr(pd.DataFrame, "to_parquet", broken)
    with pytest.raises(OSError, match="disk full"):
        run_profile(ModelSpec("bundled"), DOCS[:3], tmp_path, loaded=bundled, max_len=16)
    assert list(tmp_path.iterdir()) == []


def test_corpus_files_are_parsed_and_refused_with_our_message():
    assert parse_corpus(b"First paragraph\nstill first.\n\nSecond.", "a.txt") == [
        "First paragraph still first.",
        "Second.",
    ]
    assert parse_corpus(b"line one\nline two\n", "a.txt") == ["line one", "line two"]
    assert parse_corpus(b'{"text": "a b"}\n\n"c"\n', "a.jsonl") == ["a b", "c"]
    cases = {
        ("a.txt", b"\xff\xfe\x00"): "not UTF-8",
        ("a.jsonl", b'{"text": 1}'): "expected",
        ("a.jsonl", b"{oops"): "line 1: not JSON",
        ("a.csv", b"x"): ".txt (paragraphs or lines) or .jsonl",
        ("a.txt", b"   \n"): "no text",
        ("a.txt", b"x" * (MAX_CORPUS_BYTES + 1)): "10 MB",
    }
    for (name, data), message in cases.items():
        with pytest.raises(CorpusError, match=re.escape(message)):
            parse_corpus(data, name)


def test_the_cli_writes_the_profile_the_dashboard_reads(tmp_path, capsys):
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text("\n".join(json.dumps({"text": d}) for d in DOCS[:6]))
    assert main([str(corpus), "--model", "bundled", "--out", str(tmp_path / "profiles"), "--max-len", "32"]) == 0
    (folder,) = (tmp_path / "profiles").iterdir()
    profile = read_profile(folder)
    assert profile is not None and profile.meta["documents"] == 6 and profile.meta["engine"] == "local"
    assert "strongest previous: L" in capsys.readouterr().out
    assert main([str(tmp_path / "missing.txt"), "--out", str(tmp_path)]) == 2
    assert "is not a file" in capsys.readouterr().err


@pytest.mark.slow
def test_ray_computes_the_same_table_as_the_in_process_job(tmp_path):
    if os.environ.get("CI") is None:
        pytest.importorskip("ray")
    docs = DOCS[:8]
    local = run_profile(ModelSpec("bundled"), docs, tmp_path / "local", max_len=40, batch_size=3)
    ray = run_profile(ModelSpec("bundled"), docs, tmp_path / "ray", max_len=40, batch_size=3, engine="ray", workers=2)
    assert ray.meta["engine"] == "ray"
    pd.testing.assert_frame_equal(ray.heads, local.heads, atol=1e-6, rtol=0)
    pd.testing.assert_frame_equal(ray.docs, local.docs)


def test_jsonl_ids_stay_with_their_documents():
    from model.profile.corpus import parse_documents

    data = b'{"id": 7, "text": "a b"}\n{"id": "x", "text": "   "}\n{"text": "c"}\n"d"\n'
    assert parse_documents(data, "a.jsonl") == (["a b", "c", "d"], ["7", "", ""])  # the blank one dropped with its id
    assert parse_documents(b'{"text": "a"}\n', "a.jsonl") == (["a"], None)
    assert parse_documents(b"a\nb\n", "a.txt") == (["a", "b"], None)
    assert corpus_hash(["a"], 8) != corpus_hash(["a"], 8, ["one"])
