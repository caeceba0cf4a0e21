"""Attention Lab: `streamlit run app.py`. The frame only: page config, shared sidebar, navigation."""

import os
import sys

import streamlit as st

st.set_page_config(page_title="Attention Lab", page_icon="assets/icon.png", layout="wide")
# One slot at the top on every run, filled on a session's first run only: the browser fetches its chart code while
# torch and the model load (or the page is built). Were the slot there on the first run only, every element after it
# would move one place on the next run and be drawn anew: the button just pressed would lose the keyboard.
_charts = st.empty()
_preloading = "torch" not in sys.modules or "_preloaded" not in st.session_state
if _preloading:
    st.session_state["_preloaded"] = True
    _charts.plotly_chart({"data": [{"type": "scatter", "x": [], "y": []}], "layout": {"height": 10}}, key="_preload")

from viz.shell.boot import import_once  # noqa: E402

import_once()  # the heavy imports, once per process, one session at a time (two at once broke pandas' import)

from model.memory import RESERVE, keep_freed_memory, release_freed_memory  # noqa: E402
from viz.export.render import note_activity, warm_up_renderer  # noqa: E402
from viz.shell import jobs, prepare  # noqa: E402
from viz.shell.budget import reserve_from_env  # noqa: E402
from viz.shell.claims import claim_note, place_claim_focus  # noqa: E402
from viz.shell.deck import deck_status, restore_url_deck, slide_note  # noqa: E402
from viz.shell.export_panel import export_section, session_controls  # noqa: E402
from viz.shell.longrun import reads_whole  # noqa: E402
from viz.shell.sidebar import draw_sidebar  # noqa: E402
from viz.shell.state import init_state, load_url_state, save_url_state  # noqa: E402
from viz.shell.widgets import CHIP_CSS, PRESENTATION_CSS, unavailable  # noqa: E402
from viz.views import ViewUnavailableError  # noqa: E402
from viz.views.finite import model_notice  # noqa: E402

note_activity()  # a run starts: the image renderer's warm-up waits for a quiet moment
if _preloading:
    _charts.empty()
keep_freed_memory()  # once per process: captured tensors reuse freed memory instead of page-faulting (model/memory.py)
RESERVE.enable(reserve_from_env())  # and the next observation's patterns find their memory touched ahead

PAGES = {
    "Where attention goes": [
        st.Page("viz/pages/start.py", title="Start here", icon=":material/flag:", url_path="start"),
        st.Page("viz/pages/tokens.py", title="Tokens", icon=":material/text_fields:", url_path="tokens"),
        st.Page(
            "viz/pages/attention.py",
            title="Attention map",
            icon=":material/grid_on:",
            url_path="attention",
            default=True,
        ),
        st.Page("viz/pages/head_view.py", title="Head view", icon=":material/share:", url_path="head-view"),
        st.Page("viz/pages/overview.py", title="Model overview", icon=":material/apps:", url_path="overview"),
        st.Page("viz/pages/compare.py", title="Compare", icon=":material/compare:", url_path="compare"),
        st.Page("viz/pages/metrics.py", title="Head metrics", icon=":material/table_chart:", url_path="metrics"),
        st.Page("viz/pages/find.py", title="Find heads", icon=":material/manage_search:", url_path="find"),
        st.Page("viz/pages/next_token.py", title="Next token", icon=":material/keyboard_tab:", url_path="next-token"),
    ],
    "Why it goes there": [
        st.Page("viz/pages/block.py", title="The block", icon=":material/stacks:", url_path="block"),
        st.Page("viz/pages/qkv.py", title="Q / K / V", icon=":material/functions:", url_path="qkv"),
        st.Page("viz/pages/animate.py", title="Step through a head", icon=":material/animation:", url_path="animate"),
        st.Page("viz/pages/rollout.py", title="Rollout and flow", icon=":material/account_tree:", url_path="rollout"),
        st.Page("viz/pages/mixing.py", title="Beyond the weights", icon=":material/hub:", url_path="mixing"),
        st.Page("viz/pages/causes.py", title="Causes", icon=":material/science:", url_path="causes"),
        st.Page("viz/pages/corpus.py", title="Corpus profiles", icon=":material/dataset:", url_path="corpus"),
        st.Page("viz/pages/masks.py", title="Masks", icon=":material/visibility_off:", url_path="masks"),
        st.Page(
            "viz/pages/positional.py", title="Positional encodings", icon=":material/timeline:", url_path="positional"
        ),
        st.Page("viz/pages/lessons.py", title="Lessons", icon=":material/school:", url_path="lessons"),
        st.Page("viz/pages/learn.py", title="Watch it learn", icon=":material/model_training:", url_path="learn"),
    ],
    "Teach it": [
        st.Page("viz/pages/deck.py", title="Lecture deck", icon=":material/slideshow:", url_path="deck"),
    ],
}

page = st.navigation(PAGES, position="top")  # the sidebar starts with the model and the text
restore = st.session_state.pop("_restore_page", None)
if restore is not None:  # a session file named the page to reopen
    target = next((p for group in PAGES.values() for p in group if p.url_path == restore), None)
    if target is not None and target.url_path != page.url_path:
        st.switch_page(target)
st.markdown(CHIP_CSS, unsafe_allow_html=True)
st.session_state["_page_views"] = []  # show_view registers this run's views for the export pack
url_notes = load_url_state()  # a reload or a shared link brings its settings (first run of a session)
init_state()
device_note = prepare.settle_device()  # before the sidebar draws the device picker
requested, upload, slots = draw_sidebar()
context = prepare.prepare_context(requested, upload, slots, device_note, page.url_path)
with st.sidebar:
    deck_status()
    session_controls(page.url_path)
if context is None:
    st.title("Attention Lab")
    for problem in slots.problems:
        st.error(problem)
    st.info("Fix the problem shown in the sidebar to continue; your text and settings are kept.")
    st.stop()
st.session_state["_ctx"] = context
place_claim_focus(context.obs.tokens)  # a claim button's query and key, on the text just observed
claim_said = claim_note(page.url_path)
if claim_said:
    st.info(claim_said, icon=":material/campaign:")
with st.sidebar:
    slide_note()  # needs the text's tokens
deck_note = restore_url_deck()  # a link's deck, rebuilt on its model and text
if deck_note:
    url_notes.append(deck_note)
if context.theme.presentation:
    st.markdown(PRESENTATION_CSS, unsafe_allow_html=True)
model_note = model_notice(context.loaded.warnings, context.obs)  # NaN/Inf weights: said on top, not only aside
for notice in [*([model_note] if model_note else []), *context.obs.notices, *url_notes]:
    st.warning(notice)
st.session_state["_unavailable_shown"] = set()  # what this run has already said it cannot draw
try:
    page.run()
except ViewUnavailableError as exc:  # a view a page did not expect to be refused (a not-computable head): say why
    unavailable(exc)
link_note = save_url_state()
if link_note:
    st.caption(link_note)
export_section(page.title, page.url_path)
if reads_whole(context):  # a text read whole: its pages free large arrays, which the heaps would keep (model/memory.py)
    release_freed_memory()
if os.environ.get("ATTENTION_LAB_WARM_RENDERER", "1") != "0":
    # once per process, in the background, once the first page is up and no run has started or ended for 5 s
    # (a class opening the app together does not share the cores with a starting browser) and no background run
    # works (a long text's pass runs no script for seconds): downloads are quick
    note_activity()
    warm_up_renderer(delay=10.0, quiet=5.0, busy=jobs.any_running)
