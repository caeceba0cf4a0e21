"""A checkpoint with NaN or Inf weights loads, says so on top of the page, and every page shows the heads it
reaches as not computable, with the reason — not empty plots, "None" or NaN heads called identical."""

from __future__ import annotations

import warnings

import pytest
import torch
from safetensors.torch import save as st_save

from model.config import TransformerConfig
from model.io.catalog import BUNDLED_TOKENIZER
from model.io.checkpoint import FORMAT
from model.io.tokenizer import Tokenizer
from model.transformer import Transformer
from tests.app.conftest import figures, new_app


def captions(at) -> str:
    """Every caption on the page as the user reads it (markdown escapes removed)."""
    return " ".join(c.value for c in at.caption).replace("\\", "")


def nan_checkpoint(broken: str) -> bytes:
    """A 2-layer, 4-head model; ``broken``: the tensor (and index) that gets a NaN."""
    import json

    tok = Tokenizer.from_file(BUNDLED_TOKENIZER)
    torch.manual_seed(0)
    cfg = TransformerConfig(vocab_size=tok.vocab_size, d_model=32, n_heads=4, n_layers=2, d_ff=64, max_seq_len=64)
    state = {k: v.clone() for k, v in Transformer(cfg).state_dict().items()}
    name, index = broken.split("@")
    state[name].view(-1)[int(index)] = float("nan")
    meta = {"format": FORMAT, "config": json.dumps(cfg.to_dict()), "tokenizer": tok.to_str()}
    return st_save(state, metadata=meta)


def upload(at, data: bytes) -> None:
    at.sidebar.selectbox(key="model_kind").set_value("upload").run()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        at.sidebar.file_uploader(key="upload_file").set_value(("nan.safetensors", data, "application/octet-stream"))
        at.run()
    assert not at.exception, at.exception


@pytest.mark.slow
def test_heads_a_nan_weight_reaches_are_not_computable_on_every_page():
    at = new_app()
    upload(at, nan_checkpoint("blocks.0.attn.w_q.weight@0"))  # L0H0 and, through the stream, all of layer 1
    top = " ".join(w.value for w in at.warning)
    assert "NaN or Inf values in 1 tensor (blocks.0.attn.w_q.weight)" in top
    assert "5 of 8 heads are not computable" in top
    # the head in focus (L0H0) is one of them: the attention map says why instead of drawing an empty plot
    at.switch_page("viz/pages/attention.py").run()
    assert not at.exception
    said = " ".join(i.value for i in at.info)
    assert "L0H0 is not computable: the model's weights hold NaN or Inf values (blocks.0.attn.w_q.weight)" in said
    assert "3 of 8 heads are computable (first: L0H1)" in said
    assert sum("L0H0 is not computable" in i.value for i in at.info) == 1  # said once, not by page and app both
    at.selectbox(key="head").set_value(1).run()
    assert not at.info and figures(at)
    at.switch_page("viz/pages/metrics.py").run()
    assert not at.exception
    assert any("5 of 8 heads are not computable" in w.value for w in at.warning)
    table = next(df for df in at.dataframe if "entropy" in getattr(df.value, "columns", []))
    assert table.value["entropy"].isna().sum() == 5  # shown through a Styler as "not computable"
    pairs = next(df.value for df in at.dataframe if "JS distance" in df.value.columns)
    assert len(pairs) == 3  # only the 3 computable heads pair up: no NaN head is "identical" (distance 0) to another
    assert set(pairs["head A"]) | set(pairs["head B"]) == {"L0H1", "L0H2", "L0H3"}
    assert "5 of 8 heads are not computable (their weights are NaN or Inf)" in captions(at)
    assert "5 not computable (NaN or Inf weights)" in captions(at)  # the kinds' summary


@pytest.mark.slow
def test_a_model_with_no_computable_head_says_so_instead_of_an_empty_plot():
    at = new_app()
    upload(at, nan_checkpoint("blocks.0.ln1.weight@0"))  # every head of every layer
    at.switch_page("viz/pages/attention.py").run()
    assert not at.exception
    said = " ".join(i.value for i in at.info)
    assert "is not computable" in said and "No head of this model is computable on this text" in said
    at.switch_page("viz/pages/overview.py").run()
    assert not at.exception
    assert "not computable" in " ".join(i.value for i in at.info) + captions(at)
