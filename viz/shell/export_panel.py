"""The export section under every page and the session-file controls in the sidebar."""

from __future__ import annotations

import streamlit as st

from model.io.budget import LIMITS, MB
from viz.export.offline import page_html
from viz.export.pack import build_pack
from viz.export.render import INSTALL_HINT, image_export_available
from viz.figures.common import safe_filename
from viz.session import dump_session, load_session
from viz.shell.widgets import caption_band


def _restore() -> None:
    up = st.session_state.get("session_file")
    if up is None:
        return
    try:
        settings, page, notes = load_session(up.getvalue())
    except ValueError as exc:
        st.session_state["_session_msg"] = ("error", str(exc))
        return
    st.session_state.update(settings)
    st.session_state.pop("_focus_tokens", None)  # the file's focus belongs to the file's text: not moved
    st.session_state["_restore_page"] = page
    st.session_state["_session_msg"] = ("ok", "Session restored." + (" " + "; ".join(notes) if notes else ""))


def session_controls(page_path: str) -> None:
    """Download the current settings; load a session file back (sidebar)."""
    with st.expander("Session file"):
        st.download_button(
            "Download settings (JSON)",
            dump_session(st.session_state, page_path),
            "attention-lab-session.json",
            "application/json",
            key="session_download",
            on_click="ignore",
            icon=":material/save:",
        )
        st.file_uploader(
            "Restore a session",
            type=["json"],
            key="session_file",
            on_change=_restore,
            max_upload_size=LIMITS["session"] // MB,
        )
        msg = st.session_state.pop("_session_msg", None)
        if msg:
            (st.success if msg[0] == "ok" else st.error)(msg[1])


def export_section(page_title: str, page_path: str) -> None:
    """Under every page: build an export pack (zip) and download the page as one offline HTML file."""
    ctx = st.session_state.get("_ctx")
    views = st.session_state.get("_page_views", [])
    if ctx is None or not views:
        return
    st.divider()
    with st.expander(f"Export this page ({len(views)} figure{'s' * (len(views) != 1)})", icon=":material/ios_share:"):
        base = safe_filename("attention-lab", ctx.model_name, page_path or "attention")
        settings = {
            "model": ctx.model_name,
            "text": ctx.obs.text,
            "page": page_title,
            "device": ctx.device,
            "hide_special": ctx.hide_special,
            "causal": ctx.options.causal,
            "scale": ctx.options.scale,
            "presentation": ctx.theme.presentation,
            "dark": ctx.theme.dark,
            "colorscale": ctx.theme.colorscale,
            "image size": st.session_state.get("export_size", "screen"),
        }
        settings["options"] = {k: settings[k] for k in ("causal", "scale", "hide_special", "device")}
        layer, head = int(st.session_state.get("layer", 0)), int(st.session_state.get("head", 0))
        if not image_export_available():
            st.info(
                f"Images are not available on this server: {INSTALL_HINT}. The pack still holds the data "
                "and the interactive HTML figures."
            )
        size = st.session_state.get("export_size", "screen")
        matrices = st.checkbox(
            "Also one CSV matrix per head (besides the tidy data/attention.csv)", key="pack_matrices"
        )
        cols = st.columns(2)
        if cols[0].button("Build export pack (zip)", key="pack_build", icon=":material/folder_zip:"):
            bar = st.progress(0.0, text="Starting…")
            data, notes = build_pack(
                views,
                ctx.source.full(),  # the pack's arrays hold q, k, v, … even where the page captured only patterns
                settings,
                layer=layer,
                head=head,
                size=size,
                matrices=matrices,
                progress=lambda f, m: bar.progress(min(1.0, f), text=m),
                caption=caption_band(size),
            )
            st.session_state["_pack"] = (page_path, data, notes)
            bar.empty()
        pack = st.session_state.get("_pack")
        if pack and pack[0] == page_path:
            st.download_button(
                f"Download {base}.zip ({len(pack[1]) / 2**20:.1f} MB)",
                pack[1],
                f"{base}.zip",
                "application/zip",
                key="pack_download",
                on_click="ignore",
                type="primary",
            )
            for note in pack[2]:
                st.caption(note)
        cols[1].download_button(
            "Page as interactive HTML",
            lambda: page_html(
                [(v.title, v.exact()) for v in views],
                title=f"Attention Lab — {page_title}",
                caption=f"{ctx.model_name}: {ctx.obs.text[:300]}",
            ),
            f"{base}.html",
            "text/html",
            key="page_html",
            on_click="ignore",
            icon=":material/html:",
        )
