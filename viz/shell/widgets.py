"""Widgets shared by the pages: a chart with its export buttons, layer/head pickers, token chips, CSS."""

from __future__ import annotations

import html

import streamlit as st

from viz.export.offline import figure_html
from viz.export.provenance import provenance_line
from viz.export.render import image_export_available, render_view
from viz.figures.common import plotly_config
from viz.shell.deck import deck_button, slide_window, view_provenance
from viz.views.base import View

_MARKDOWN = str.maketrans({c: "\\" + c for c in "\\`*_{}[]()#+-.!|<>~$"})


def plain(text: str) -> str:
    """Text shown through Markdown as typed (tokens come from the user: `*`, `$` or `[` must not format)."""
    return text.translate(_MARKDOWN)


def head_label(pair: tuple[int, int]) -> str:
    """(layer, head) -> "L0H1", the label used wherever a list of heads is shown."""
    return f"L{pair[0]}H{pair[1]}"


def caption_band(size: str) -> bool:
    """Whether downloaded images carry the caption in a band under the plot (the sidebar's choice)."""
    choice = st.session_state.get("export_caption", "slides")
    return choice == "always" or (choice == "slides" and size == "slide")


def _downloads(view: View, key: str) -> str:
    """Register the view for the page's export pack and draw its SVG/PNG/HTML buttons (bytes rendered only
    when clicked, at the image size chosen in the sidebar, with the caption and provenance) and its "Add to
    deck" button. Returns the file stem."""
    size = st.session_state.get("export_size", "screen")
    name = view.name + ("_slide" if size == "slide" else "")
    st.session_state.setdefault("_page_views", []).append(view)
    row = st.container(horizontal=True, gap="small")
    band = caption_band(size)

    def html_file():  # exact, not block means; the caption and provenance under the figure
        return figure_html(
            view.exact(), view.title, caption=view.caption, source=provenance_line(view_provenance(view))
        )

    def image(fmt):
        record = view_provenance(view)
        return lambda: render_view(view, fmt, size=size, caption=band, provenance=record, window=slide_window())

    downloads = [("HTML", html_file, "text/html")]
    if image_export_available():
        downloads = [("SVG", image("svg"), "image/svg+xml"), ("PNG", image("png"), "image/png"), *downloads]
    for label, make, mime in downloads:
        row.download_button(
            label,
            make,
            f"{name}.{label.lower()}",
            mime,
            key=f"{key}__{label.lower()}",
            icon=":material/download:",
            type="tertiary",
            on_click="ignore",  # a download needs no rerun of the page
        )
    deck_button(view, key, row)
    return name


def show_view(view: View, key: str, *, on_select=None, **kwargs):
    """Render a view exactly as it will be exported (``theme=None``: no Streamlit restyling), with the
    modebar's PNG named after the view and the download buttons under it. Returns the chart's event."""
    size = st.session_state.get("export_size", "screen")
    name = view.name + ("_slide" if size == "slide" else "")
    kwargs.setdefault("width", "stretch")
    select = {} if on_select is None else {"on_select": on_select}
    event = st.plotly_chart(view.figure, key=key, config=plotly_config(name, size=size), theme=None, **select, **kwargs)
    if view.caption:
        st.caption(plain(view.caption))
    _downloads(view, key)
    return event


def clicked(chart_key: str) -> list:
    """The customdata of the points a click selected in a chart (empty when none)."""
    points = ((st.session_state.get(chart_key) or {}).get("selection") or {}).get("points") or []
    return [p["customdata"] for p in points if "customdata" in p]


def selected_row(table_key: str) -> int | None:
    """The row picked in a single-row-select ``st.dataframe`` (None when none)."""
    rows = ((st.session_state.get(table_key) or {}).get("selection") or {}).get("rows") or []
    return rows[0] if rows else None


ATTENTION_PAGE = "viz/pages/attention.py"


def open_page(path: str) -> None:
    """From a callback: switch to this page on the next run (callbacks cannot switch pages themselves)."""
    st.session_state["_open_page"] = path


def open_head(layer: int, head: int) -> None:
    """From a callback: put this head in focus and open it on the attention map."""
    st.session_state["layer"], st.session_state["head"] = int(layer), int(head)
    open_page(ATTENTION_PAGE)


def open_clicked(chart_key: str) -> None:
    """From a callback: a clicked head (a grid cell or a thumbnail reporting (layer, head, …)) opens on the
    attention map."""
    for layer, head, *_ in clicked(chart_key)[:1]:
        open_head(layer, head)


def follow_open_page() -> None:
    """At the top of a page: go where a callback of the last run asked to go."""
    target = st.session_state.pop("_open_page", None)
    if target:
        st.switch_page(target)


def focus_cell(chart_key: str) -> None:
    """Callback: a clicked heatmap cell puts its row's token in focus as the query and its column's as the key."""
    for query, key, *_ in clicked(chart_key)[:1]:
        st.session_state["focus_query"], st.session_state["focus_key"] = int(query), int(key)


def show_focusable(view: View, key: str):
    """A heatmap whose cells can be clicked to change the tokens in focus (see focus_cell)."""
    return show_view(view, key, on_select=lambda: focus_cell(key), selection_mode="points")


def export_buttons(view: View, key: str) -> None:
    """Only the download buttons of a view (for what a component draws on screen, e.g. the head view)."""
    _downloads(view, key)


def show_views(views: list[View], key: str, columns: int = 1) -> None:
    """Several views of one build (e.g. Q, K and V) side by side, ``columns`` to a row."""
    for i in range(0, len(views), columns):
        row = views[i : i + columns]
        for col, item in zip(st.columns(columns) if columns > 1 else [st.container()], row):
            with col:
                show_view(item, f"{key}_{item.key.rsplit('.', 1)[-1]}" if len(views) > 1 else key)


def unavailable(exc: Exception) -> None:
    """Say why a view cannot be drawn here (a ViewUnavailableError's message), once per run: a page that
    catches a refusal and tries again, refused for the same reason, does not repeat it."""
    shown = st.session_state.setdefault("_unavailable_shown", set())
    if str(exc) in shown:
        return
    shown.add(str(exc))
    st.info(str(exc))


def section(key: str, options) -> str:
    """Which part of a page to show (only that part is computed and drawn, unlike tabs)."""
    if st.session_state.get(key) is None:  # a second click on the chosen button clears it: keep the last one
        st.session_state[key] = st.session_state.get(f"_last_{key}", options[0])
    choice = st.segmented_control("Section", options, key=key, label_visibility="collapsed")
    st.session_state[f"_last_{key}"] = choice
    return choice


def layer_head_picker(n_layers: int, n_heads: int, prefix: str = "", *, head: bool = True, label: str = ""):
    """Layer (and head) selectors. Without a prefix they share the global layer/head keys (the head in focus)."""
    lk, hk = (f"{prefix}layer", f"{prefix}head") if prefix else ("layer", "head")
    cols = st.columns(2)
    layer = cols[0].selectbox(f"{label}Layer", range(n_layers), key=lk)
    h = cols[1].selectbox(f"{label}Head", range(n_heads), key=hk) if head else 0
    return int(layer), int(h)


def token_chips(tokens, ids, offsets, special) -> str:
    """HTML chips for tokens (escaped: whatever the user typed renders as text)."""
    chips = []
    for i, (tok, tid, (a, b), sp) in enumerate(zip(tokens, ids, offsets, special)):
        cls = "al-chip al-special" if sp else "al-chip"
        span = "special" if sp else f"chars {a}–{b}"
        chips.append(
            f'<span class="{cls}" title="position {i} · id {tid} · {span}">'
            f"<b>{html.escape(tok)}</b><small>#{i} · id {tid} · {span}</small></span>"
        )
    return '<div class="al-chips">' + "".join(chips) + "</div>"


CHIP_CSS = """
<style>
.al-chips {display: flex; flex-wrap: wrap; gap: 6px; margin: 4px 0 12px 0;}
.al-chip {display: inline-flex; flex-direction: column; padding: 4px 8px; border-radius: 8px;
          background: #e7ecff; border: 1px solid #b9c6ff; color: #1b2559; font-family: monospace;}
.al-chip small {color: #4a5480; font-size: 0.72em;}
.al-special {background: #f1f3f5; border: 1px dashed #adb5bd; color: #495057;}
/* captions carry the computed sentences: Streamlit's faded grey (#828180, 3.9:1 on white) is too light to read */
[data-testid="stCaptionContainer"] {color: #5c5b59; opacity: 1;}
/* on a phone, plotly's floating toolbar sits on the chart's title; the buttons under each figure export it anyway */
@media (max-width: 640px) {.js-plotly-plot .modebar-container {display: none;}}
/* a progress bar steps instead of sliding: redrawn every frame for half of every second, the slide took a long
   pass's cores away on a machine that runs the browser too (bench/RESULTS.md, "the browser beside a long pass") */
[data-testid="stProgressBarTrack"], [data-testid="stProgressBarTrack"] * {transition: none !important;}
/* what a rerun leaves stale dims at once after Streamlit's half-second delay instead of fading for a second: the
   fade of a whole page, its charts composited frame by frame, took a core from the model beside it */
[data-testid="stElementContainer"][data-stale="true"] {transition-duration: 0s !important;}
</style>
"""

PRESENTATION_CSS = """
<style>
.stMainBlockContainer p, .stMainBlockContainer li, .stMainBlockContainer label {font-size: 1.25rem !important;}
.stMainBlockContainer h1 {font-size: 3rem !important;}
.stMainBlockContainer h2, .stMainBlockContainer h3 {font-size: 2rem !important;}
</style>
"""


def ask_once(asked: tuple, memo: str, message: str, label: str, key: str) -> None:
    """Work expected to take long waits for a button that states its time: show ``message`` and the button
    ``label`` and stop the page until it is pressed; once pressed for ``asked`` (what the work is computed on), the
    session is not asked again for it (``memo``: the session key that remembers)."""
    if st.session_state.get(memo) == asked:
        return
    box = st.empty()
    with box.container():
        st.info(message)
        pressed = st.button(label, key=key, icon=":material/play_arrow:")
    if not pressed:
        st.stop()
    box.empty()  # the question is answered: the results take its place
    st.session_state[memo] = asked


def options_changed(ctx) -> list[str]:
    """What the sidebar's Attention options change in the run the attention pages draw (empty: the model as built)."""
    options, cfg = ctx.options, ctx.loaded.model.cfg
    changed = []
    if options.causal is not None and bool(options.causal) != bool(cfg.causal):
        changed.append("the causal mask " + ("on" if options.causal else "lifted"))
    if not options.scale:
        changed.append("scores not divided by √d_k")
    return changed


def as_built_note(ctx, what: str) -> None:
    """Says that ``what`` runs the model as built when the Attention options change the attention pages' run (those
    options are an experiment on the attention itself; these measures are of the model that was trained)."""
    changed = options_changed(ctx)
    if changed:
        st.info(
            f"{what} the model as built: the Attention options in the sidebar ({'; '.join(changed)}) change the "
            "attention pages and Beyond the weights, not this.",
            icon=":material/info:",
        )
