"""Each of the post's six claims lands on the view that shows it, in one click from Start here: the page, the model
that carries it (switched to and said, when the sidebar's cannot: a post-norm model never illustrates "pre-norm"),
the text, the layer, head, query and step."""

from __future__ import annotations

import pytest

from tests.app.conftest import new_app
from viz.shell.claims import CLAIMS
from viz.views.animate import STEPS
from viz.views.find import COREFERENCE


def clicked(index: int, model: str = "bundled"):
    at = new_app()
    if model != "bundled":
        at.sidebar.selectbox(key="model_kind").set_value(model).run()
    at.switch_page("viz/pages/start.py").run()
    at.button(key=f"start_claim_{index}").click().run()
    assert not at.exception, at.exception
    return at


def notes(at) -> str:
    return " ".join(i.value for i in at.info)


@pytest.mark.slow
def test_q_and_k_opens_the_q_k_step_of_the_head_and_query_that_show_it():
    at = clicked(0)
    state = at.session_state
    assert state["text"] == COREFERENCE and state["model_kind"] == "bundled"
    assert (state["layer"], state["head"], state["anim_step"]) == (2, 0, STEPS.index("q·k"))
    tokens = state["_ctx"].obs.tokens
    assert tokens[state["anim_query"]] == "it" and tokens[state["focus_key"]] == "animal"
    assert "Step through a head" in [t.value for t in at.title]
    assert "switched the text to the coreference example" in notes(at)


@pytest.mark.slow
def test_a_post_norm_model_never_illustrates_pre_norm():
    at = clicked(4, model="minilm")
    assert at.session_state["model_kind"] == "bundled"
    assert "all-MiniLM-L6-v2 is a post-norm model, which cannot show x + MHA(LN(x))" in notes(at)
    assert "The block" in [t.value for t in at.title]


@pytest.mark.slow
@pytest.mark.parametrize("index", range(len(CLAIMS)))
def test_every_claim_opens_its_page(index):
    at = clicked(index)
    claim = CLAIMS[index]
    assert at.session_state["_ctx"] is not None and not at.exception
    for key, value in claim.settings.items():
        assert at.session_state[key] == value, key
    assert f"Claim {index + 1}" in notes(at)


@pytest.mark.slow
def test_the_focus_follows_its_token_when_the_text_changes():
    at = new_app()
    at.sidebar.text_area(key="text").set_value(COREFERENCE).run()
    tokens = at.session_state["_ctx"].obs.tokens
    at.session_state["focus_query"], at.session_state["focus_key"] = tokens.index("it"), tokens.index("animal")
    at.run()
    at.sidebar.text_area(key="text").set_value("Yesterday, " + COREFERENCE.replace("The animal", "the animal")).run()
    assert not at.exception
    tokens = at.session_state["_ctx"].obs.tokens
    assert tokens[at.session_state["focus_query"]] == "it" and tokens[at.session_state["focus_key"]] == "animal"
    at.sidebar.text_area(key="text").set_value("The cat sat on the mat.").run()  # "it" is gone: clamped, no error
    assert not at.exception


def test_moved_keeps_the_occurrence():
    from viz.shell.prepare import moved

    old = ("[CLS]", "it", "is", "it", "[SEP]")
    assert moved(old, ("[CLS]", "so", "it", "is", "it", "[SEP]"), 3) == 4  # the second "it" stays the second
    assert moved(old, ("[CLS]", "it", "[SEP]"), 3) == 1  # one "it" left: the nearest
    assert moved(old, ("[CLS]", "no", "[SEP]"), 1) == -1
