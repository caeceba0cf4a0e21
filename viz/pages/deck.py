"""Lecture deck: the figures added with "Add to deck", in order; retitle, reorder, remove; export as PowerPoint
or as one offline HTML file of slides."""

import plotly.io as pio
import streamlit as st

from viz.export.deck import deck_html, deck_pptx, slides
from viz.export.motion import motion_gif
from viz.export.render import INSTALL_HINT, image_export_available, render_image
from viz.figures.common import safe_filename
from viz.shell.deck import build_lecture_here, deck
from viz.shell.jobs import plain_error
from viz.shell.widgets import plain

st.title("Lecture deck")
items = deck()
st.caption(
    "Every figure has an “Add to deck” button: it keeps the figure as it is on screen, with its computed caption "
    "and where it comes from. Here you order them and export the lecture: PowerPoint (one 16:9 slide per figure, "
    "the caption as the slide's text, speaker notes with the numbers and a question to ask; a predict-first "
    "lesson becomes a question slide and then its answer) or one offline HTML file (arrow keys move). The deck "
    "is saved in the session file (sidebar)."
)


def _move(i: int, by: int) -> None:
    j = i + by
    if 0 <= j < len(items):
        items[i], items[j] = items[j], items[i]
    st.session_state.pop("_deck_pptx", None)


def _remove(i: int) -> None:
    items.pop(i)
    st.session_state.pop("_deck_pptx", None)


def _retitle(i: int, key: str) -> None:
    items[i]["title"] = st.session_state[key].strip() or items[i]["title"]
    st.session_state.pop("_deck_pptx", None)


def _clear() -> None:
    items.clear()
    st.session_state.pop("_deck_pptx", None)


with st.container(border=True):
    st.markdown(
        "**The lecture, in one click**: the post's story on the sidebar's text — tokens, positions, Q, K and V, one "
        "query's q·k, ÷√d_k, the softmax, weights × V, many heads, heads specialise, the pre-norm block, the causal "
        "mask, permutation without positions, what a trained model does, an induction head forming — each slide "
        "from the model that shows it, with one computed sentence on it and notes with a question for the room and "
        "its expected answer."
    )
    if st.button("Build the lecture", key="deck_build_lecture", type="primary", icon=":material/auto_awesome:"):
        build_lecture_here(items)
    for note in st.session_state.pop("_lecture_notes", []):
        st.caption(plain(note))

if not items:
    st.info("The deck is empty. Build the lecture above, or open any page and press “Add to deck” under a figure.")
    st.stop()

title = st.text_input("Deck title (the first slide)", key="deck_title")
n_slides = 1 + len(slides(items))
st.markdown(f"**{len(items)} figure{'s' * (len(items) != 1)} · {n_slides} slides**")
for i, item in enumerate(items):
    with st.container(border=True):
        cols = st.columns([0.06, 0.64, 0.1, 0.1, 0.1], vertical_alignment="bottom")
        cols[0].markdown(f"**{i + 1}.**")
        key = f"deck_title_{item['id']}"
        st.session_state.setdefault(key, item["title"])
        cols[1].text_input("Slide title", key=key, on_change=_retitle, args=(i, key), label_visibility="collapsed")
        cols[2].button("↑", key=f"deck_up_{item['id']}", on_click=_move, args=(i, -1), disabled=i == 0, help="Move up")
        cols[3].button(
            "↓",
            key=f"deck_down_{item['id']}",
            on_click=_move,
            args=(i, 1),
            disabled=i == len(items) - 1,
            help="Move down",
        )
        cols[4].button("✕", key=f"deck_remove_{item['id']}", on_click=_remove, args=(i,), help="Remove from the deck")
        if item.get("question"):
            st.caption("Predict first — the question slide comes before this one: " + plain(item["question"][:200]))
        if item["caption"]:
            st.caption(plain(item["caption"]))
        st.caption(plain(item["source"]))
        with st.expander("Preview"):
            st.plotly_chart(pio.from_json(item["figure"]), key=f"deck_fig_{item['id']}", theme=None)

name = safe_filename("attention-lab-deck", title or "lecture")
cols = st.columns(3)
if not image_export_available():
    st.info(f"PowerPoint needs the figures as images: {INSTALL_HINT}. The HTML slides work without it.")
elif cols[0].button("Build PowerPoint (.pptx)", key="deck_build", icon=":material/slideshow:", type="primary"):
    bar = st.progress(0.0, text="Rendering slides…")
    try:
        st.session_state["_deck_pptx"] = deck_pptx(
            items,
            title=title,
            render=lambda fig: render_image(fig, "png", size="slide"),
            progress=lambda f, m: bar.progress(min(1.0, f), text=m),
            animate=motion_gif,  # the lecture's motion slides play as animated GIFs
        )
    except (OSError, RuntimeError) as exc:  # a full disk, the renderer gone: the deck stays, the page works
        st.error(f"The PowerPoint could not be built: {plain_error(exc)} The deck is kept; the HTML slides need "
                 "no rendering.", icon=":material/error:")  # fmt: skip
    bar.empty()
if st.session_state.get("_deck_pptx"):
    data = st.session_state["_deck_pptx"]
    cols[0].download_button(
        f"Download {name}.pptx ({len(data) / 2**20:.1f} MB)",
        data,
        f"{name}.pptx",
        "application/vnd.openxmlformats-officedocument.presentationml.presentation",
        key="deck_pptx",
        on_click="ignore",
    )
cols[1].download_button(
    "Slides as one HTML file",
    lambda: deck_html(items, title=title, animate=motion_gif if image_export_available() else None),
    f"{name}.html",
    "text/html",
    key="deck_html",
    on_click="ignore",
    icon=":material/html:",
)
cols[2].button("Clear the deck", key="deck_clear", on_click=_clear, icon=":material/delete:")
