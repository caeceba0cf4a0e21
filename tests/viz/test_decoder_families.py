"""What SmolLM3, OLMo 2 and Granite bring, as the views show it: NoPE layers named on the overview and the map,
OLMo 2's norms drawn on the sublayers' outputs only, Granite's multipliers in the block diagram."""

from __future__ import annotations

import pytest

from model.anatomy import anatomy
from model.io.catalog import ModelSpec
from tests.hf_fixtures import FIXTURES
from viz.figures import Theme
from viz.views import build
from viz.views.source import DirectSource

TEXT = "The query asks, the keys answer, and the values come back."


@pytest.fixture(scope="module")
def sources():
    return {n: DirectSource.for_text(ModelSpec("folder", path=str(FIXTURES / n)), TEXT) for n in ("smollm3", "olmo2")}


def test_nope_layers_are_named_on_the_overview_and_the_map(sources):
    src = sources["smollm3"]
    (over,) = build("overview", src, Theme())
    ticks = list(over.figure.layout.yaxis.ticktext)
    assert ticks == ["L0", "L1 NoPE", "L2", "L3 NoPE"]
    assert "NoPE: no positions" in over.figure.layout.title.text
    (one,) = build("attention", src, Theme(), layer=3, head=0)
    assert one.figure.layout.title.text.startswith("Layer 3 (NoPE), head 0")
    assert "Layer 3 gets no positions (NoPE)" in one.caption
    (other,) = build("attention", src, Theme(), layer=2, head=0)
    assert "NoPE" not in other.caption
    angles = {v.key: v for v in build("pe.model", src, Theme())}["pe.model.angles"]
    assert angles.caption.startswith("These angles turn q and k in 2 of 4 layers; layer 1, 3 skip them (NoPE)")
    detail = anatomy(src.loaded.model.cfg).part("attn").detail
    assert "RoPE on q and k except in layer 1, 3 (NoPE: no positions there)" in detail


def test_a_nope_layer_has_no_rotary_embedding():
    """The fixture's layers 1 and 3 rotate nothing (their parity with transformers is tests/model)."""
    import torch

    from model.io.checkpoint import load_checkpoint

    model = load_checkpoint(FIXTURES / "smollm3").model
    assert [b.attn.rope is None for b in model.blocks] == [False, True, False, True]
    q = torch.randn(1, 4, 5, model.cfg.d_k)
    assert model.blocks[0].attn.rope is not None and not torch.equal(model.blocks[0].attn.rope(q, 0), q)


def test_olmo2_draws_its_norms_on_the_outputs_only(sources):
    cfg = sources["olmo2"].loaded.model.cfg
    parts = {p.key for p in anatomy(cfg).parts}
    assert {"ln1_post", "ln2_post"} <= parts and not {"ln1", "ln2"} & parts
    assert "q/k norm over the whole projection" in anatomy(cfg).part("attn").detail
    (diagram,) = build("block.diagram", sources["olmo2"], Theme())
    assert diagram.caption.startswith("Norms on the outputs: each sublayer reads the stream as it is")


def test_granites_multipliers_are_in_the_diagram():
    from model.io.checkpoint import load_checkpoint

    a = anatomy(load_checkpoint(FIXTURES / "granite").model.cfg)
    assert "× 12 (embedding multiplier)" in a.part("embed").detail
    assert "× 0.22 (residual multiplier)" in a.part("add1").detail
    assert "q·k × 0.5 (not ÷√8)" in a.part("attn").detail
    assert "÷ 4" in a.part("head").detail


def test_granites_embedding_multiplier_is_in_what_layer_0_reads():
    import numpy as np

    from model.analysis.stream import embedding_parts

    src = DirectSource.for_text(ModelSpec("folder", path=str(FIXTURES / "granite")), TEXT)
    parts = embedding_parts(src.loaded.model, src.obs.ids)
    assert np.array_equal(parts["token"], parts["sum"])  # RoPE adds nothing here: the rows × 12 are the input
    (first,) = build("anim.frame", src, Theme(), step=0)
    assert "times 12 (its embedding multiplier)" in first.caption
