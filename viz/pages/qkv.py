"""Q / K / V: the computation of one head step by step, one query explained, Q/K space, value norms."""

import numpy as np
import streamlit as st

from viz.settings import QKV_SECTIONS
from viz.shell.components import token_strip
from viz.shell.context import page_context
from viz.shell.services import views
from viz.shell.widgets import layer_head_picker, section, show_focusable, show_view, show_views
from viz.views.focus import position_name

ctx = page_context()
obs = ctx.obs
st.title("Q / K / V")
st.caption(
    "All tokens are shown here (special ones included): hiding keys would change the computation. The query in "
    "focus (blue) is the one explained under “One query”; click a token or a softmax cell to change it."
)
token_strip(obs.tokens, obs.special)
layer, head = layer_head_picker(obs.n_layers, obs.n_heads)
tokens = obs.tokens
steps, head_w = ctx.source.steps(layer, head)
d_k = steps.q.shape[1]
focus = {"query": st.session_state["focus_query"], "key": st.session_state["focus_key"]}
query = focus["query"] if focus["query"] >= 0 else min(1, len(tokens) - 1)
part = section("qkv_section", QKV_SECTIONS)
cfg = ctx.loaded.model.cfg
if cfg.group_size > 1:  # grouped-query attention: K and V belong to a group of query heads
    kv = obs.kv_head(head)
    sharing = ", ".join(str(h) for h in range(kv * cfg.group_size, (kv + 1) * cfg.group_size))
    st.info(
        f"Grouped-query attention: {cfg.n_heads} query heads share {cfg.kv_heads} key/value heads. Head {head} "
        f"reads key/value head {kv}, which query heads {sharing} all read: their K and V below are the same "
        "matrices; only Q (and so the pattern) differs.",
        icon=":material/group_work:",
    )


if part in QKV_SECTIONS[:2]:
    position = f" → + {position_name(cfg)}" if steps.position is not None else ""
    softmax = "softmax beside the learned sink" if steps.sink is not None else "softmax"
    st.markdown(
        f"**X → Q, K, V → QKᵀ → ÷√d_k{position} → + mask → {softmax} → ·V → head output → concat · W_o** "
        f"for layer {layer}, head {head} (d_k = {d_k}). Hover any cell for its exact value."
    )
if part == QKV_SECTIONS[0]:
    show_views(views(ctx, "qkv.x", layer=layer), "qkv_x")
    show_views(views(ctx, "qkv.projections", layer=layer, head=head), "qkv_proj")
    st.caption("Next: “Scores → output” above.")
elif part == QKV_SECTIONS[1]:
    show_views(views(ctx, "qkv.scores", layer=layer, head=head, **focus), "qkv_scores")
    (softmax,) = views(ctx, "qkv.softmax", layer=layer, head=head, **focus)
    show_focusable(softmax, "qkv_softmax")
    show_views(views(ctx, "qkv.z", layer=layer, head=head), "qkv_z")
    show_views(views(ctx, "qkv.output", layer=layer), "qkv_out")
    err_p = float(np.abs(steps.pattern - obs.patterns[layer, head]).max())
    err_o = float(np.abs(steps.out - ctx.source.full().attn_out[layer]).max())
    st.caption(
        f"Check against the model's own forward pass: softmax differs by at most {err_p:.1e}, the "
        f"attention output by at most {err_o:.1e}."
    )
elif part == "One query":
    (fig,) = views(ctx, "qkv.query", layer=layer, head=head, query=query)
    show_view(fig, "qkv_query_fig")
elif part == "Query/key space":
    (fig,) = views(ctx, "qkv.plane", layer=layer, head=head, query=query)
    show_view(fig, "qkv_space")
else:
    (fig,) = views(ctx, "qkv.values", layer=layer, head=head)
    show_view(fig, "qkv_values")
