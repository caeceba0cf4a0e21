"""Head metrics: a sortable table of per-head statistics and a head-similarity matrix."""

import pandas as pd
import streamlit as st

from model.pipeline import head_similarity, metrics_table
from viz.figures import similarity_matrix
from viz.pages.common import ctx, show_chart


@st.cache_resource(max_entries=16, show_spinner="Comparing heads…")
def cached_similarity(spec, device, text, options, hide_special, _analysis, _keep):
    return head_similarity(_analysis, _keep)


c = ctx()
a = c.analysis
st.title("Head metrics")
st.caption(
    "One row per head, averaged over query tokens. Entropy in nats (0 = all weight on one key); mean distance "
    "in tokens; mass = share of attention on the token itself, the previous or next token, or special tokens. "
    "Click a column header to sort."
)
table = pd.DataFrame(metrics_table(a))
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
dist, labels = cached_similarity(c.spec, c.device, a.text, c.options, c.hide_special, a, c.keep)
show_chart(
    similarity_matrix(dist, labels, title="Head similarity (JS distance)", theme=c.theme),
    "metrics_sim",
    "metrics",
    "similarity",
)
