"""The lecture deck in a session: "Add to deck" keeps the figure as it is, the Deck page retitles, reorders and
removes, the session file carries the deck back; the sidebar warns when slides cannot label every token."""

from __future__ import annotations

import plotly.io as pio
import pytest

from tests.app.conftest import new_app
from viz.export.lecture import LECTURE
from viz.figures.theme import SLIDE_TOKENS
from viz.session import dump_session, load_session

TEXT = "The animal didn't cross the street because it was too tired."


@pytest.mark.slow
def test_add_reorder_retitle_remove_and_restore():
    at = new_app()
    at.sidebar.text_area(key="text").set_value(TEXT).run()
    at.session_state["layer"], at.session_state["head"] = 1, 2
    at.session_state["focus_query"], at.session_state["focus_key"] = 10, 2
    at.run()
    at.button(key="attn_main__deck").click().run()
    assert any("as slide 2 (after the title slide): the deck has 1 figure." in t.value for t in at.toast)
    at.button(key="attn_grid__deck").click().run()
    at.button(key="attn_main__deck").click().run()  # the same view again: said, not added twice
    assert any("is already slide 2 of the deck (2 figures)" in t.value for t in at.toast)
    assert not at.exception
    deck = at.session_state["deck"]
    assert [i["key"] for i in deck] == ["attention", "heads"]
    first = deck[0]
    assert first["caption"].startswith("L1H2 gives") and "“it”" in first["caption"]
    assert first["provenance"]["selection"]["query"] == 10 and first["provenance"]["text"] == TEXT
    screen = at.session_state["_ctx"]  # the figure kept is the one on screen
    assert pio.from_json(first["figure"]).data[0].z is not None and screen.model_name in first["source"]

    at.switch_page("viz/pages/deck.py").run()
    assert not at.exception
    assert any("2 figures · 3 slides" in m.value for m in at.markdown)
    ids = [i["id"] for i in deck]
    at.text_input(key=f"deck_title_{ids[0]}").set_value("Where “it” looks").run()
    assert at.session_state["deck"][0]["title"] == "Where “it” looks"
    at.button(key=f"deck_down_{ids[0]}").click().run()
    assert [i["id"] for i in at.session_state["deck"]] == ids[::-1]
    saved = dump_session(at.session_state, "deck")
    at.button(key=f"deck_remove_{ids[1]}").click().run()
    assert [i["id"] for i in at.session_state["deck"]] == [ids[0]]

    settings, page, notes = load_session(saved)
    assert page == "deck" and [i["id"] for i in settings["deck"]] == ids[::-1] and not notes
    assert settings["deck"][1]["title"] == "Where “it” looks"


@pytest.mark.slow
def test_slides_of_a_long_text_offer_the_window_around_the_focus():
    at = new_app()
    at.sidebar.text_area(key="text").set_value(" ".join([TEXT] * 3)).run()
    at.session_state["export_size"] = "slide"
    at.run()
    assert any(f"a slide's token map labels {SLIDE_TOKENS} of them at 18 pt" in w.value for w in at.sidebar.warning)
    at.sidebar.toggle(key="slide_window").set_value(True).run()
    at.session_state["focus_query"] = 30
    at.run()
    at.button(key="attn_main__deck").click().run()
    slide = pio.from_json(at.session_state["deck"][0]["slide"])
    start = 30 - SLIDE_TOKENS // 2  # the window centred on the focus
    shown = f"tokens {start}–{start + SLIDE_TOKENS - 1}"
    assert len(slide.data[0].y) == SLIDE_TOKENS and shown in slide.layout.title.text.replace("<br>", " ")
    assert list(slide.layout.yaxis.tickvals) == list(slide.data[0].y)  # every token of the window labelled
    short = new_app()
    short.session_state["export_size"] = "slide"
    short.run()
    assert not [w for w in short.sidebar.warning if "token map labels" in w.value]


@pytest.mark.slow
def test_a_link_carries_a_small_deck_and_rebuilds_it():
    from streamlit.testing.v1 import AppTest

    from tests.app.conftest import APP

    at = new_app()
    at.sidebar.text_area(key="text").set_value(TEXT).run()
    at.session_state["focus_query"] = 10
    at.run()
    at.button(key="attn_main__deck").click().run()
    at.switch_page("viz/pages/deck.py").run()
    (item,) = at.session_state["deck"]
    at.text_input(key=f"deck_title_{item['id']}").set_value("Where “it” looks").run()
    params = dict(at.query_params.items())
    assert "deck" in params and len(params["deck"]) < 1500

    fresh = AppTest.from_file(str(APP), default_timeout=90)
    for key, value in params.items():
        fresh.query_params[key] = value
    fresh.run()
    assert not fresh.exception
    (again,) = fresh.session_state["deck"]
    assert again["title"] == "Where “it” looks" and again["caption"] == item["caption"]
    assert again["slide"] == item["slide"] and again["figure"] == item["figure"]

    at.sidebar.text_area(key="text").set_value("The cat sat on the mat.").run()  # the deck's figure: another text
    assert "deck" not in dict(at.query_params.items())
    said = " ".join(c.value for c in at.caption)
    assert "The lecture deck is not in this link: its figure comes from another model or text" in said
    assert "one offline HTML file" in said

    broken = AppTest.from_file(str(APP), default_timeout=90)
    broken.query_params["deck"] = "not-a-deck"
    broken.run()
    assert not broken.exception and any("deck could not be read" in w.value for w in broken.warning)


@pytest.mark.slow
def test_build_the_lecture_in_one_click(default_run, monkeypatch):
    """From a fresh start: one press on the Lecture deck page, and the deck holds the whole lecture on the text."""
    monkeypatch.setenv("ATTENTION_LAB_RUNS", str(default_run[1]))
    at = new_app()
    at.sidebar.text_area(key="text").set_value(TEXT).run()
    at.switch_page("viz/pages/deck.py").run()
    assert any("The deck is empty. Build the lecture above" in i.value for i in at.info)
    at.button(key="deck_build_lecture").click().run()
    assert not at.exception, at.exception
    deck = at.session_state["deck"]
    n = len(LECTURE) + 3  # the post's story, then the induction head forming: its curves, moments and a frame
    assert len(deck) == n and all(item.get("takeaway") for item in deck)
    assert deck[0]["provenance"]["text"] == TEXT
    assert any(f"Built the lecture: {n} figures, slides 2 to {n + 1}." in t.value for t in at.toast)
    assert any(f"{n} figures · {n + 3} slides" in m.value for m in at.markdown)  # a title and two question slides


@pytest.mark.slow
def test_a_full_disk_while_the_pptx_renders_says_so_and_keeps_the_deck(monkeypatch):
    import errno

    import viz.export.render as render

    at = new_app()
    at.sidebar.text_area(key="text").set_value(TEXT).run()
    at.button(key="attn_main__deck").click().run()
    at.switch_page("viz/pages/deck.py").run()

    def full(*args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device", "/tmp/kaleido-abc/fig.png")

    monkeypatch.setattr(render, "render_image", full)
    monkeypatch.setattr("viz.export.render.image_export_available", lambda: True)
    at.button(key="deck_build").click().run()
    assert not at.exception
    said = " ".join(e.value for e in at.error)
    assert "disk is full" in said and "The deck is kept" in said and "/tmp" not in said
    assert len(at.session_state["deck"]) == 1  # nothing lost
