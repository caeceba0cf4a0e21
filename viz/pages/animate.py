"""Step through a head: one head's computation animated with the real numbers of the text (play, pause, step,
scrub), and the same frames as a GIF, an MP4 or numbered PNGs."""

import time

import streamlit as st

from viz.export.animation import gif, mp4, png_zip, render_frames
from viz.export.render import image_export_available
from viz.shell.components import token_strip
from viz.shell.context import page_context
from viz.shell.deck import view_provenance
from viz.shell.services import views
from viz.shell.widgets import caption_band, layer_head_picker, show_view
from viz.views.animate import STEPS, WINDOW

LAST = len(STEPS) - 1

ctx = page_context()
obs = ctx.obs
st.title("Step through a head")
st.caption(
    "One head of one layer, computed in front of you with this text's real numbers: the token embeddings, X, "
    "Q, K and V, one query's dot products with every key, ÷√d_k, the mask, the softmax, the weighted values, "
    f"the heads side by side and W_o. Press play, or step and scrub. Texts longer than {WINDOW} tokens show the "
    f"{WINDOW} around the query."
)
token_strip(obs.tokens, obs.special)
layer, head = layer_head_picker(obs.n_layers, obs.n_heads)
c1, c2 = st.columns([3, 2])
query = int(
    c1.selectbox(
        "Query (the token that looks)",
        range(obs.n_tokens),
        key="anim_query",
        format_func=lambda i: f"{i}: {obs.tokens[i]}",
    )
)
seconds = float(c2.slider("Seconds per step", 0.5, 5.0, step=0.5, key="anim_seconds"))


def toggle() -> None:
    playing = not st.session_state.get("_anim_playing", False)
    st.session_state["_anim_playing"] = playing
    st.session_state["_anim_last"] = time.monotonic()
    if playing and st.session_state.get("anim_step", 0) >= LAST:  # play from the start again
        st.session_state["anim_step"] = 0


def move(by: int) -> None:
    st.session_state["_anim_playing"] = False
    st.session_state["anim_step"] = min(max(st.session_state.get("anim_step", 0) + by, 0), LAST)


playing = bool(st.session_state.get("_anim_playing", False))
row = st.container(horizontal=True, gap="small")
row.button(
    "Pause" if playing else "Play",
    key="anim_play",
    on_click=toggle,
    type="primary",
    icon=":material/pause:" if playing else ":material/play_arrow:",
    shortcut="K",
    help="Play or pause (K)",
)
row.button("Back", key="anim_back", on_click=move, args=(-1,), icon=":material/skip_previous:", shortcut="J",
           help="One step back (J)")  # fmt: skip
row.button("Next", key="anim_next", on_click=move, args=(1,), icon=":material/skip_next:", shortcut="L",
           help="One step on (L)")  # fmt: skip


@st.fragment(run_every=seconds if playing else None)
def player() -> None:
    """The frame on screen; while playing, each timed rerun of this fragment moves one step on (and stops at
    the last step)."""
    if (
        st.session_state.get("_anim_playing")
        and time.monotonic() - st.session_state.get("_anim_last", 0) >= 0.8 * seconds
    ):
        st.session_state["_anim_last"] = time.monotonic()
        step = st.session_state.get("anim_step", 0) + 1
        st.session_state["anim_step"] = min(step, LAST)
        if step >= LAST:
            st.session_state["_anim_playing"] = False
            st.rerun()  # the whole page: the button says Play again and the timer stops
    step = st.select_slider(
        "Step", options=list(range(LAST + 1)), key="anim_step", format_func=lambda i: f"{i + 1}. {STEPS[i]}"
    )
    st.caption(f"Step {step + 1} of {LAST + 1}: {STEPS[step]}")
    (frame,) = views(ctx, "anim.frame", layer=layer, head=head, query=query, step=int(step))
    show_view(frame, "anim_fig")


player()
st.subheader("Take it away")
frames = [views(ctx, "anim.frame", layer=layer, head=head, query=query, step=s)[0] for s in range(LAST + 1)]
size = st.session_state.get("export_size", "screen")
band = caption_band(size) or True  # an animation's frames always carry their caption
record = view_provenance(frames[0])
stem = frames[0].name.replace("_step-0", "")
if not image_export_available():
    st.info("Install Debian's chromium (apt-get install chromium) to export the animation.")
else:
    st.caption(
        f"{LAST + 1} frames at the image size chosen in the sidebar ({size}), each with its caption, "
        f"{seconds:g} s per step; making a file takes about 10–20 s."
    )
    out = st.container(horizontal=True, gap="small")

    def rendered() -> list[bytes]:
        return render_frames(frames, size=size, caption=band, provenance=record)

    files = (
        ("GIF", lambda: gif(rendered(), seconds), "gif", "image/gif", ":material/gif:"),
        ("MP4", lambda: mp4(rendered(), seconds), "mp4", "video/mp4", ":material/movie:"),
        ("PNG frames (zip)", lambda: png_zip(rendered(), stem), "zip", "application/zip", ":material/folder_zip:"),
    )
    for label, make, ext, mime, icon in files:
        name = f"{stem}_frames.zip" if ext == "zip" else f"{stem}.{ext}"
        out.download_button(label, make, name, mime, key=f"anim_{ext}", icon=icon, on_click="ignore")
