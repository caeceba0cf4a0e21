"""Tokens: the text as chips with ids and character spans."""

import pandas as pd
import streamlit as st

from viz.pages.common import ctx, token_chips

c = ctx()
a = c.analysis
st.title("Tokens")
st.caption(
    f"{c.model_name()} splits the text into {len(a.tokens)} tokens"
    + (f" (of {a.n_tokens_full}; the rest were cut)" if a.truncated else "")
    + ". Hover a chip for its position, id and the characters it covers."
)
k = c.keep
st.markdown(
    token_chips([a.tokens[i] for i in k], [a.ids[i] for i in k], [a.offsets[i] for i in k], a.special[k]),
    unsafe_allow_html=True,
)
table = pd.DataFrame(
    {
        "position": k,
        "token": [a.tokens[i] for i in k],
        "id": [a.ids[i] for i in k],
        "start": [a.offsets[i][0] for i in k],
        "end": [a.offsets[i][1] for i in k],
        "text span": ["" if a.special[i] else a.text[a.offsets[i][0] : a.offsets[i][1]] for i in k],
        "special": a.special[k],
    }
)
st.dataframe(table, hide_index=True, key="tokens_table")
