"""Large honest-looking inputs (issue 48): a 1 MB pasted text, a 10 MB corpus on one line and a 50 MB tokenizer.json
are read as far as they are used, said so in words, and leave the app working."""

from __future__ import annotations

import json
import time

import pytest

from model.errors import CheckpointError
from model.io.catalog import ModelSpec
from model.io.tokenizer import MAX_TEXT_CHARS, Tokenizer
from model.profile.corpus import parse_documents
from model.profile.run import run_profile
from tests.app.conftest import new_app

TEXT = "The animal didn't cross the street because it was too tired. "


@pytest.mark.slow
def test_a_megabyte_of_pasted_text_is_read_as_far_as_the_model_reads_and_the_link_leaves_it_out():
    at = new_app()
    at.run()
    at.sidebar.text_area(key="text").set_value((TEXT * 20_000)[:1_000_000]).run()
    assert not at.exception
    said = " ".join(w.value for w in at.warning)
    assert f"only the first {MAX_TEXT_CHARS:,} were read" in said and "the model reads" in said
    assert "text" not in dict(at.query_params.items())  # a link keeps short texts only, and says so
    assert any(b.label == "Cancel" for b in at.button) or at.get("plotly_chart")  # read in the background
    end = time.time() + 240
    while not at.get("plotly_chart") and time.time() < end:
        time.sleep(2)
        at.run()
    assert not at.exception and at.get("plotly_chart")  # then drawn


@pytest.mark.slow
def test_a_ten_megabyte_corpus_on_one_line_is_one_document_read_to_its_cut(tmp_path):
    data = (TEXT * 200_000).encode()[:9_999_999]  # the upload box takes up to 10,000,000 bytes
    docs, ids = parse_documents(data, "one-line.txt")
    assert len(docs) == 1 and ids is None
    profile = run_profile(ModelSpec("bundled"), docs, tmp_path, max_len=64)
    (row,) = profile.docs.itertuples()
    assert row.n_tokens == 64 and len(row.text) == MAX_TEXT_CHARS  # kept as far as the tokenizer reads it
    assert sum(f.stat().st_size for f in profile.path.iterdir()) < 2**20


@pytest.mark.slow
def test_a_fifty_megabyte_tokenizer_json_is_read_and_a_smaller_model_refuses_it_in_words(tmp_path):
    vocab = {f"w{i:07d}-padding-to-make-it-long": i for i in range(1_300_000)}
    unk = "w0000000-padding-to-make-it-long"
    spec = {"version": "1.0", "added_tokens": [], "normalizer": None, "pre_tokenizer": {"type": "Whitespace"},
            "post_processor": None, "decoder": None, "truncation": None, "padding": None,
            "model": {"type": "WordLevel", "vocab": vocab, "unk_token": unk}}  # fmt: skip
    path = tmp_path / "tokenizer.json"
    path.write_text(json.dumps(spec))
    assert 48 * 2**20 < path.stat().st_size < 64 * 2**20  # under the upload limit of its kind
    tok = Tokenizer.from_file(path)
    assert tok.vocab_size == 1_300_000
    with pytest.raises(CheckpointError, match="embedding table has only 30522 rows"):
        tok.check_fits(30_522)
