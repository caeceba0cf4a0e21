"""Head view: token-to-token lines for the heads of a layer, drawn in the browser (as BertViz users know it)."""

import streamlit as st

from viz.figures.headview import WINDOW
from viz.settings import HV_KINDS
from viz.shell.components import head_view
from viz.shell.context import page_context
from viz.shell.longrun import WHOLE, long_observation, reads_whole
from viz.shell.services import views
from viz.shell.widgets import export_buttons, layer_head_picker, unavailable
from viz.views import ViewUnavailableError
from viz.views.cross import source_tokens

LONG_WINDOW = 2 * WINDOW  # tokens of a long text drawn at a time
ctx = page_context()
obs = ctx.obs
whole = reads_whole(ctx)
st.title("Head view", help=f"Marked “{WHOLE}”: on a long text this page reads every token." if whole else None)
long = long_observation(ctx, layer=int(st.session_state["layer"])) if whole else None  # once its layer is read
st.caption(
    "Query tokens on the left, key tokens on the right; the stronger the weight, the more opaque the line. "
    "Hover a token to see only its lines (left: where it looks, right: who looks at it); click it to put it in "
    "focus on every page. The chips switch heads on and off; the slider hides faint lines (every line at least "
    "0.01 heavy is sent, none left out: the count beside it is how many are drawn)."
)
layer, _ = layer_head_picker(obs.n_layers, obs.n_heads, head=False)
heads = st.multiselect("Heads", list(range(obs.n_heads)), key="hv_heads", format_func=lambda h: f"head {h}")
threshold = st.session_state["hv_threshold"]
cross = obs.cross is not None and long is None and st.radio(
    "Attention", HV_KINDS, key="hv_attention", horizontal=True,
    help="This decoder reads a source: its self-attention looks at the target's earlier tokens, its "
    "cross-attention at the source's tokens.",
) == HV_KINDS[1]  # fmt: skip
if not heads:
    st.info("Pick at least one head.")
elif cross:  # the target's tokens (queries) on the left, the source's (keys) on the right
    keys = source_tokens(ctx.source)
    rows = obs.keep(ctx.hide_special)
    st.caption(f"Left: the target's tokens (the decoder's queries); right: the {len(keys)} tokens of the source.")
    head_view(obs.cross[layer][:, rows], ctx.tokens, heads, threshold, ctx.theme, key="hv_component", keys=keys)
elif long is not None:  # a window of the whole text: each of its queries' exact weights on its keys
    n, focus = long.n_tokens, st.session_state["focus_query"]
    first = st.slider(
        f"First token of the {LONG_WINDOW} shown (of {n:,})", 0, n - LONG_WINDOW, key="hv_start",
        value=max(0, min(max(0, focus) - LONG_WINDOW // 2, n - LONG_WINDOW)),
        help="Lines go from each query of the window to the keys in it: weight on keys outside it is not drawn.",
    )  # fmt: skip
    span = (first, first + LONG_WINDOW)
    labels = [f"{t}·{i}" for i, t in enumerate(long.tokens[first : first + LONG_WINDOW], first)]
    head_view(long.weights(layer, None, span, span), labels, heads, threshold, ctx.theme, "hv_component", first)
    st.caption(f"Download a static version ({WINDOW} tokens around the query in focus) for slides:")
    start = max(0, min(max(0, focus) - WINDOW // 2, n - WINDOW))
else:
    sink = None if ctx.obs.sink is None else ctx.obs.sink[layer][:, ctx.obs.keep(ctx.hide_special)]  # (H, N)
    head_view(ctx.patterns(layer), ctx.tokens, heads, threshold, ctx.theme, key="hv_component", sink=sink)
    st.caption(f"Download a static version ({WINDOW} tokens around the query in focus) for slides:")
    focus = st.session_state["focus_query"]  # the token clicked on screen: its lines stand out in the download
    start = max(0, min(max(0, focus) - WINDOW // 2, len(ctx.tokens) - WINDOW))
if heads and cross:
    st.caption("The download for slides draws self-attention; switch to it above to download.")
elif heads:
    try:
        (fig,) = views(ctx, "headview", layer=layer, heads=tuple(heads), threshold=threshold, start=start, focus=focus)
        export_buttons(fig, "hv_fig")
    except ViewUnavailableError as exc:
        unavailable(exc)
