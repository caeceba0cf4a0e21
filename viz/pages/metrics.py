"""Head metrics: a sortable table of per-head statistics (a row opens its head) and a head-similarity matrix
(a cell opens the two heads side by side)."""

import numpy as np
import pandas as pd
import streamlit as st

from model.analysis.clark import CLARK_HELP, CLARK_METRICS
from model.analysis.cross import CROSS_METRICS
from model.analysis.kinds import KINDS
from model.analysis.metrics import METRIC_HELP, metrics_table
from model.analysis.similarity import similarity_rows, similarity_seconds
from viz.figures.heatmaps import CLICK_MAX_HEADS
from viz.settings import METRIC_DEFINITIONS
from viz.shell.context import page_context
from viz.shell.longrun import WHOLE, long_observation, reads_whole
from viz.shell.services import get_clark, views
from viz.shell.widgets import (
    clicked,
    follow_open_page,
    head_label,
    open_clicked,
    open_head,
    open_page,
    selected_row,
    show_view,
    unavailable,
)
from viz.views import ViewUnavailableError
from viz.views.kinds import PER_KIND, focus_pair

ASK_ABOVE_S = 1.5  # a head comparison expected to take longer waits for the button, with its estimate


def open_row() -> None:
    """Callback: a selected table row becomes the head in focus, shown on the attention map."""
    row = selected_row("metrics_table")
    if row is not None:
        open_head(*st.session_state["_metrics_rows"][row])


def open_pair(layer_a: int, head_a: int, layer_b: int, head_b: int) -> None:
    """Show two heads side by side on the Compare page (the page switches on the next run)."""
    st.session_state.update(
        cmp_mode="two heads",
        cmpA_layer=int(layer_a),
        cmpA_head=int(head_a),
        cmpB_layer=int(layer_b),
        cmpB_head=int(head_b),
    )
    open_page("viz/pages/compare.py")


def compare_clicked_cell() -> None:
    """Callback: a clicked similarity cell opens its two heads side by side on the Compare page."""
    for layer_a, head_a, layer_b, head_b, *_ in clicked("metrics_sim")[:1]:
        open_pair(layer_a, head_a, layer_b, head_b)


def compare_selected_pair() -> None:
    """Callback: a selected row of the closest pairs opens them side by side on the Compare page."""
    row = selected_row("metrics_pairs")
    if row is not None:
        open_pair(*st.session_state["_metrics_pairs"][row])


follow_open_page()
ctx = page_context()
whole = reads_whole(ctx)
st.title("Head metrics", help=f"Marked “{WHOLE}”: on a long text this page reads every token." if whole else None)
if whole:
    long_observation(ctx, summary=True)
st.subheader("What kinds of heads")
st.caption(
    "Each head sorted by the job it does on this text — the strongest of each kind as thumbnails with their score "
    "(the same numbers as the table below, Find heads and Beyond the weights). With a query and a key in focus "
    "(click a cell of the attention map: “it” and “animal”, say), the heads that link them get a row of their own. "
    "Click a thumbnail to open the head."
)
try:
    (gallery,) = views(ctx, "heads.gallery", query=st.session_state["focus_query"], key=st.session_state["focus_key"])
    show_view(gallery, "metrics_gallery", on_select=lambda: open_clicked("metrics_gallery"), selection_mode="points")
    kinds = ctx.source.kinds(
        pair=focus_pair(ctx.source, st.session_state["focus_query"], st.session_state["focus_key"])
    )
    shown = [(kind, h) for kind in KINDS for h in kinds.heads(kind)[:PER_KIND]]
    st.dataframe(
        pd.DataFrame(
            {
                "kind": [kinds.pair if kind == "your pair" else kind for kind, _ in shown],
                "head": [head_label(h) for _, h in shown],
                "score": [float(kinds.scores[kind][h]) for kind, h in shown],
                "what it does here": [kinds.sentence(kind, *h) for kind, h in shown],
            }
        ),
        hide_index=True,
        key="metrics_kinds",
        column_config={"score": st.column_config.NumberColumn(format="%.2f")},
    )
except ViewUnavailableError as exc:
    unavailable(exc)
st.subheader("Every head, every metric")
st.caption(
    "One row per head, averaged over the ordinary query tokens (special tokens are not counted as queries). "
    "Entropy in nats (0 = all weight on one key); mean distance in tokens; mass = share of attention on the token "
    "itself, the previous or next token, or special tokens — hover a column header for its exact definition. "
    "Click a column header to sort; click a row to open that head on the attention map."
)
definitions = st.radio(
    "Definitions",
    METRIC_DEFINITIONS,
    key="metrics_definitions",
    horizontal=True,
    help="Clark et al. (2019) count every token as a query (special ones too), divide by the text's length and "
    "smooth before the entropy; their numbers differ from the lab's by as much as 0.1–0.2 on the same weights.",
)
clark = definitions == METRIC_DEFINITIONS[1]
if clark and ctx.obs.patterns is None:
    st.info("Clark et al.'s statistics need every pattern of the text: shorten it to the model's first 512 tokens.")
    clark = False
if clark:
    st.caption(
        "As their General_Analysis notebook computes them (tested equal to their code, tests/model/test_clark.py): "
        "[CLS], [SEP], “.” and “,” are matched by their text, so a model with other special tokens shows 0 there."
    )
    numbers = get_clark(ctx.spec, ctx.device, ctx.obs.text, ctx.options, ctx.obs)
    layers, heads = numbers["self"].shape
    table = pd.DataFrame(
        [{"layer": i, "head": h, **{m: float(numbers[m][i, h]) for m in CLARK_METRICS}}
         for i in range(layers) for h in range(heads)]
    )  # fmt: skip
else:
    table = pd.DataFrame(metrics_table(ctx.source.metrics()))
helps = CLARK_HELP if clark else METRIC_HELP
if "sink" in table:
    st.caption(
        "**sink**: this model gives every head a learned sink, a logit in each row's softmax that belongs to no token; "
        "the column is its share of a row, and every other mass here is a share of the same whole (entropy counts "
        "the sink as one more outcome)."
    )
st.session_state["_metrics_rows"] = list(zip(table["layer"], table["head"]))
broken = int(table["entropy"].isna().sum())
if broken:
    st.warning(
        f"{broken} of {len(table)} heads are not computable: their attention weights are NaN or Inf (the model's "
        "weights hold NaN or Inf values). Their rows say so; they are left out of the comparisons below.",
        icon=":material/warning:",
    )
numeric = [m for m in table.columns if m not in ("layer", "head")]
st.dataframe(
    table.style.format("{:.3f}", subset=numeric, na_rep="not computable") if broken else table,
    hide_index=True,
    key="metrics_table",
    on_select=open_row,
    selection_mode="single-row",
    height=min(38 + 35 * len(table), 560),
    column_config={
        m: st.column_config.NumberColumn(format="%.3f", help=helps[m])
        for m in table.columns
        if m not in ("layer", "head")
    },
)
if ctx.obs.cross is not None and not whole:  # an encoder–decoder's decoder: how its heads read the source
    st.subheader("How the heads read the source (cross-attention)")
    metric = st.selectbox("Statistic", list(CROSS_METRICS), key="metrics_cross", help=CROSS_METRICS.get(
        st.session_state.get("metrics_cross"), ""))  # fmt: skip
    (cross,) = views(ctx, "cross_metrics", metric=metric)
    show_view(cross, "metrics_cross_fig", on_select=lambda: open_clicked("metrics_cross_fig"), selection_mode="points")
st.subheader("Which heads attend alike?")
obs = ctx.obs
heads = obs.n_layers * obs.n_heads
estimate = similarity_seconds(heads, obs.n_tokens, obs.n_tokens, obs.causal)
if not whole and estimate > ASK_ABOVE_S and not ctx.source.similarity_ready():
    rows = similarity_rows(heads, obs.n_tokens, obs.n_tokens, obs.causal)
    st.info(
        f"Comparing every pair of the {heads} heads ({heads * (heads - 1) // 2:,} pairs, on {rows} of the "
        f"{obs.n_tokens} query rows) takes about {estimate:.1f} s on this server's CPU, so it waits for the button. "
        "Once compared, it is kept for every page and user."
    )
    label = f"Compare the heads (about {estimate:.1f} s)"
    if not st.button(label, key="metrics_compare", icon=":material/play_arrow:"):
        st.stop()
dist, pairs, _ = ctx.source.similarity()
clickable = len(pairs) <= CLICK_MAX_HEADS
st.caption(
    "Jensen–Shannon distance between the heads' patterns"
    + (
        " — with special tokens hidden, each row is renormalised over the shown tokens so it is a distribution again"
        if ctx.hide_special
        else ""
    )
    + ", ordered by clustering so similar heads sit together. "
    + ("Click a cell to compare its two heads side by side." if clickable else "")
)
(fig,) = views(ctx, "similarity")
show_view(fig, "metrics_sim", on_select=compare_clicked_cell if clickable else None, selection_mode="points")
st.markdown("**The closest pairs of heads** — click a row to compare them side by side:")
i, j = np.triu_indices(len(pairs), k=1)
computable = np.flatnonzero(np.isfinite(dist[i, j]))  # heads with NaN/Inf weights compare with nothing
closest = computable[np.argsort(dist[i, j][computable], kind="stable")[:10]]
st.session_state["_metrics_pairs"] = [(*pairs[i[c]], *pairs[j[c]]) for c in closest]
st.dataframe(
    pd.DataFrame(
        {
            "head A": [head_label(pairs[i[c]]) for c in closest],
            "head B": [head_label(pairs[j[c]]) for c in closest],
            "JS distance": [float(dist[i[c], j[c]]) for c in closest],
        }
    ),
    hide_index=True,
    key="metrics_pairs",
    on_select=compare_selected_pair,
    selection_mode="single-row",
    column_config={"JS distance": st.column_config.NumberColumn(format="%.3f")},
)
