"""Every page of the dashboard on the families that brought new behaviour into the stack — heads wider than
d_model / H with QK-norm (Qwen3), sandwich norms and sliding layers (Gemma 3), capped scores (Gemma 2), a RoPE
encoder with local layers (ModernBERT), a parallel residual with partial rotary (GPT-NeoX), NoPE layers (SmolLM3),
norms on the outputs only (OLMo 2), multipliers (Granite), mixtures of experts (Mixtral, Qwen3-MoE) and learned
sinks (gpt-oss), narrow embeddings (ELECTRA), one shared layer (ALBERT) and a relative-position bias (MPNet): no
page fails on them, nor any section of a sectioned page (Q / K / V, positions, lessons, Beyond the weights, Causes):
the circuit card raised on ALBERT's and ELECTRA's narrow embeddings, the gradient methods after a scaled RoPE's
table was made in inference mode, "Heads specialise" on a decoder that reads a source."""

from __future__ import annotations

import re

import pytest

from tests.app.conftest import PAGES, new_app
from tests.app.test_pages import SECTIONED
from tests.hf_fixtures import FIXTURES
from viz.settings import QKV_SECTIONS

ROPE = FIXTURES.parent / "hf_rope"
PAIRS = FIXTURES.parent / "hf_encdec"


@pytest.mark.slow
@pytest.mark.parametrize(
    "family",
    [
        *("qwen3", "gemma3_text", "gemma2", "modernbert", "gpt_neox", "smollm3", "olmo2", "granite"),
        *("mixtral", "qwen3_moe", "gpt_oss", "rope:dynamic", "rope:longrope"),
        *("electra", "albert", "mpnet", "deberta-v2"),
        *("pair:t5:decoder", "pair:t5_v1_1:encoder", "pair:bart:decoder", "pair:mbart:encoder"),
    ],
)
def test_every_page_renders_on_the_family(family, monkeypatch):
    """(rope:…: a decoder with a scaled RoPE whose angles depend on the text's length, tests/fixtures/hf_rope;
    pair:…: one stack of an encoder–decoder, tests/fixtures/hf_encdec.)"""
    parts = family.split(":")
    folder = {"rope": ROPE, "pair": PAIRS}[parts[0]] / parts[1] if len(parts) > 1 else FIXTURES / family
    monkeypatch.setenv("ATTENTION_LAB_MODEL_DIRS", str(folder.parent))
    at = new_app()
    at.sidebar.selectbox(key="model_kind").set_value("folder").run()
    at.sidebar.text_input(key="folder_path").set_value(str(folder)).run()
    if family.startswith("pair:"):
        at.sidebar.radio(key="pair_stack").set_value(parts[2]).run()
        assert at.session_state["pair_stack"] == parts[2]
    at.sidebar.text_area(key="text").set_value("The query asks, the keys answer, and the values come back.").run()
    assert not at.exception and not at.sidebar.error, [e.value for e in at.sidebar.error]
    for page in PAGES:
        at.switch_page(page)
        at.run()
        assert not at.exception, (family, page, at.exception)
        assert not at.error, (family, page, [e.value for e in at.error])
        key, sections, _ = SECTIONED.get(page, (None, (), ()))
        for name in sections:  # every section of a sectioned page (Q/K/V, positions, lessons, mixing)
            at.session_state[key] = name
            at.run()
            assert not at.exception, (family, page, name, at.exception)
            assert not at.error, (family, page, name, [e.value for e in at.error])
    # Q / K / V's step by step ends in the model's own weights on every family (its position terms and sink
    # included: the page's own check said 0.9 on T5 and gpt-oss before they were steps of their own)
    at.switch_page("viz/pages/qkv.py")
    at.session_state["qkv_section"] = QKV_SECTIONS[1]
    at.run()
    (check,) = [c.value for c in at.caption if c.value.startswith("Check against the model's own forward pass")]
    differs = [float(x) for x in re.findall(r"by at most (\d\.\de[+-]\d+)", check)]
    assert len(differs) == 2 and max(differs) <= 1e-5, (family, check)
