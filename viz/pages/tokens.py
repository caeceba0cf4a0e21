"""Tokens: the text as chips with ids and character spans."""

import pandas as pd
import streamlit as st

from viz.shell.context import page_context
from viz.shell.widgets import token_chips

ctx = page_context()
obs = ctx.obs
st.title("Tokens")
st.caption(
    f"{ctx.model_name} splits the text into {len(obs.tokens)} tokens"
    + (f" (of {obs.n_tokens_full}; the rest were cut)" if obs.truncated else "")
    + ". Hover a chip for its position, id and the characters it covers."
)
keep = ctx.keep
st.markdown(
    token_chips(ctx.tokens, [obs.ids[i] for i in keep], [obs.offsets[i] for i in keep], obs.special[keep]),
    unsafe_allow_html=True,
)
table = pd.DataFrame(
    {
        "position": keep,
        "token": ctx.tokens,
        "id": [obs.ids[i] for i in keep],
        "start": [obs.offsets[i][0] for i in keep],
        "end": [obs.offsets[i][1] for i in keep],
        "text span": ["" if obs.special[i] else obs.text[obs.offsets[i][0] : obs.offsets[i][1]] for i in keep],
        "special": obs.special[keep],
    }
)
st.dataframe(table, hide_index=True, key="tokens_table")
