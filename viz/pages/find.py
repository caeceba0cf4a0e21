"""Find heads: every head ranked by the weight it puts on (query, key) pairs you choose; column patterns flagged."""

import pandas as pd
import streamlit as st

from model.analysis.find import COLUMN_SHARE, RELATIONS
from model.analysis.metrics import METRIC_HELP
from viz.shell.context import page_context
from viz.shell.longrun import WHOLE, long_observation, reads_whole
from viz.shell.services import views
from viz.shell.widgets import (
    clicked,
    follow_open_page,
    head_label,
    open_head,
    plain,
    selected_row,
    show_view,
    unavailable,
)
from viz.views import ViewUnavailableError
from viz.views.cross import source_tokens
from viz.views.find import RELATION_LABELS, SOURCE, found_for


def open_found(layer: int, head: int) -> None:
    """Show this head on the attention map, with the first picked query and key in focus."""
    relation = st.session_state.get("find_relation")
    if relation in ("tokens", SOURCE):  # a source token is not a token of the text: only the query takes focus
        picks = (("find_queries", "focus_query"),) + ((("find_keys", "focus_key"),) if relation == "tokens" else ())
        for pick, focus in picks:
            if st.session_state.get(pick):
                st.session_state[focus] = int(st.session_state[pick][0])
    open_head(layer, head)


def open_clicked() -> None:
    for layer, head in clicked("find_fig")[:1]:
        open_found(layer, head)


def open_row() -> None:
    row = selected_row("find_table")
    if row is not None:
        open_found(*st.session_state["_find_rows"][row])


follow_open_page()
ctx = page_context()
obs = ctx.obs
whole = reads_whole(ctx)
st.title("Find heads", help=f"Marked “{WHOLE}”: on a long text this page reads every token." if whole else None)
long = long_observation(ctx, summary=True) if whole else None  # the same numbers as Head metrics over every token
tokens = long.tokens if long is not None else obs.tokens
st.caption(
    "Which head links these tokens? Pick queries (rows: the tokens that look) and keys (columns: the tokens "
    "looked at), or a relation. Every head of every layer is ranked by the weight its queries put on their keys. "
    f"A head is flagged **column** when the other tokens give the same keys at least {COLUMN_SHARE:.0%} as much: "
    "its weight there is not about your query. Click a thumbnail or a row to open that head."
)
offered = (*RELATIONS, SOURCE) if obs.cross is not None else RELATIONS  # a decoder that reads a source: its cross
if st.session_state["find_relation"] not in offered:
    st.session_state["find_relation"] = RELATIONS[0]
labels = {**RELATION_LABELS, SOURCE: "target tokens on source tokens I pick (cross-attention)"}
relation = st.radio("Look for", offered, format_func=labels.get, horizontal=True, key="find_relation")
if relation in METRIC_HELP:  # previous / next: one definition with Head metrics (the same numbers)
    st.caption(plain(f"The same number as Head metrics' “{relation}” column. {METRIC_HELP[relation]}"))
queries, keys = [], []
if relation == "tokens":
    c1, c2 = st.columns(2)
    options = list(range(len(tokens)))

    def token(i: int) -> str:
        return f"{i}: {tokens[i]}"

    queries = c1.multiselect("Query tokens (rows)", options, format_func=token, key="find_queries")
    keys = c2.multiselect("Key tokens (columns)", options, format_func=token, key="find_keys")
elif relation == SOURCE:
    c1, c2 = st.columns(2)
    names = source_tokens(ctx.source)
    queries = c1.multiselect("Target tokens (queries)", list(range(obs.n_tokens)),
                             format_func=lambda i: f"{i}: {obs.tokens[i]}", key="find_queries")  # fmt: skip
    keys = c2.multiselect("Source tokens (keys)", list(range(len(names))), format_func=lambda i: f"{i}: {names[i]}",
                          key="find_sources")  # fmt: skip
try:
    (fig,) = views(ctx, "find", relation=relation, queries=tuple(queries), keys=tuple(keys))
except ViewUnavailableError as exc:
    unavailable(exc)
    st.stop()
show_view(fig, "find_fig", on_select=open_clicked, selection_mode="points")
found, _ = found_for(ctx.source, relation, tuple(queries), tuple(keys))
ranking = found.ranking()
st.session_state["_find_rows"] = ranking
table = {
    "rank": list(range(1, len(ranking) + 1)),
    "head": [head_label(h) for h in ranking],
    "weight on the pairs": [float(found.score[h]) for h in ranking],
}
if found.column is not None:
    table["from the other tokens"] = [float(found.column[h]) for h in ranking]
    table["column pattern"] = [bool(found.flagged[h]) for h in ranking]
st.dataframe(
    pd.DataFrame(table),
    hide_index=True,
    key="find_table",
    on_select=open_row,
    selection_mode="single-row",
    height=min(38 + 35 * len(ranking), 460),
    column_config={
        c: st.column_config.NumberColumn(format="%.3f") for c in ("weight on the pairs", "from the other tokens")
    },
)
