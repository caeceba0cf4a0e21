"""Head metrics: a sortable table of per-head statistics and a head-similarity matrix."""

import pandas as pd
import streamlit as st

from model.analysis.metrics import metrics_table
from viz.shell.context import page_context
from viz.shell.widgets import show_view
from viz.views import build

ctx = page_context()
st.title("Head metrics")
st.caption(
    "One row per head, averaged over query tokens. Entropy in nats (0 = all weight on one key); mean distance "
    "in tokens; mass = share of attention on the token itself, the previous or next token, or special tokens. "
    "Click a column header to sort."
)
table = pd.DataFrame(metrics_table(ctx.obs.metrics))
st.dataframe(
    table,
    hide_index=True,
    key="metrics_table",
    column_config={
        m: st.column_config.NumberColumn(format="%.3f") for m in table.columns if m not in ("layer", "head")
    },
)
st.subheader("Which heads attend alike?")
st.caption("Jensen–Shannon distance between the heads' patterns, ordered by clustering so similar heads sit together.")
(fig,) = build("similarity", ctx.source, ctx.theme)
show_view(fig, "metrics_sim")
