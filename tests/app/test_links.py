"""A link reopens what was on screen: for each page, non-default choices of its sections, toggles and sliders (and
the export size) go into the URL; a fresh session opened on that URL draws the same figures."""

from __future__ import annotations

import json

import pytest
from streamlit.testing.v1 import AppTest

from tests.app.conftest import APP

#: page -> non-default values a lecturer might set there (every sectioned page shows a section other than its first)
CHOICES = {
    "viz/pages/lessons.py": {"lesson_section": "Why √d_k"},
    "viz/pages/qkv.py": {"qkv_section": "One query"},
    "viz/pages/positional.py": {"pe_section": "Permutation lab", "perm_positions": True, "perm_seed": 3},
    "viz/pages/attention.py": {
        "attn_mode": "raw scaled scores (QKᵀ/√d_k)",
        "export_size": "slide",
        "export_caption": "always",
        "slide_window": True,
    },
    "viz/pages/mixing.py": {"mix_section": "Compare methods"},
    "viz/pages/compare.py": {"cmp_mode": "two texts", "cmp_text_b": "A dog barked at the cat."},
    "viz/pages/head_view.py": {"hv_threshold": 0.2},
    "viz/pages/find.py": {"find_relation": "next"},
    "viz/pages/overview.py": {"layer": 2, "head": 3},
    "viz/pages/rollout.py": {"focus_query": 4, "dark": True},
    "viz/pages/tokens.py": {"hide_special": True},
    "viz/pages/metrics.py": {"colorscale": "Cividis"},
    "viz/pages/masks.py": {"pad_text_b": "A much longer second text for the batch."},
    "viz/pages/block.py": {"block_token": 3},
    "viz/pages/animate.py": {"anim_step": 7, "anim_query": 4, "layer": 1, "head": 2},
}
#: every lesson, opened on a non-default choice of its own where it has one
LESSONS = {
    "Predict first": {"predict_layer": 1, "predict_head": 2, "predict_guess": 2},
    "Why √d_k": {},
    "Heads specialise": {"lesson_metric": "entropy"},
    "Pre- or post-norm": {},
    "Ablation": {},
    "Masked tokens": {},
    "Attention sinks": {"sink_layer": 1, "sink_head": 3},
    "Induction heads": {"ind_period": 12, "ind_seed": 2},
    "Shared K/V (GQA)": {"gqa_kv": 0},
}


def drawn(at: AppTest) -> list[dict]:
    """The figures on the page, without plotly's per-render ids."""
    out = []
    for el in at.get("plotly_chart"):
        spec = json.loads(el.proto.spec)
        spec.get("layout", {}).pop("uirevision", None)
        out.append(spec)
    return out


@pytest.mark.slow
@pytest.mark.parametrize("page", sorted(CHOICES))
def test_a_link_reopens_the_page_as_it_was(page):
    at = AppTest.from_file(str(APP), default_timeout=90)
    at.run()
    at.sidebar.text_area(key="text").set_value("The animal didn't cross the street because it was too tired.").run()
    at.switch_page(page).run()
    for key, value in CHOICES[page].items():
        at.session_state[key] = value
    at.run()
    assert not at.exception
    params = {k: v for k, v in at.query_params.items()}
    for key in CHOICES[page]:
        assert key in params, (page, key, params)
    before = drawn(at)
    # the head view draws in its own component, the tokens page as chips: their settings are compared below
    assert before or page.endswith(("head_view.py", "tokens.py")), page

    fresh = AppTest.from_file(str(APP), default_timeout=90)
    for key, value in params.items():
        fresh.query_params[key] = value
    fresh.run()
    fresh.switch_page(page).run()
    assert not fresh.exception
    for key, value in CHOICES[page].items():
        assert fresh.session_state[key] == value, (page, key)
    assert drawn(fresh) == before


@pytest.mark.slow
@pytest.mark.parametrize("lesson", sorted(LESSONS))
def test_a_link_reopens_every_lesson_as_it_was(lesson):
    at = AppTest.from_file(str(APP), default_timeout=90)
    at.run()
    at.switch_page("viz/pages/lessons.py").run()
    at.session_state["lesson_section"] = lesson
    for key, value in LESSONS[lesson].items():
        at.session_state[key] = value
    at.run()
    assert not at.exception
    params = dict(at.query_params.items())
    assert params.get("lesson_section") == lesson or lesson == "Predict first"  # the default stays out of links
    before = drawn(at)
    fresh = AppTest.from_file(str(APP), default_timeout=90)
    for key, value in params.items():
        fresh.query_params[key] = value
    fresh.run()
    fresh.switch_page("viz/pages/lessons.py").run()
    assert not fresh.exception
    for key, value in {"lesson_section": lesson, **LESSONS[lesson]}.items():
        assert fresh.session_state[key] == value, (lesson, key)
    assert drawn(fresh) == before, lesson
