"""The sidebar's last part: the loaded model's About box (its architecture, where it came from, what was read from
which files — the load report), its warnings, and what this text cost."""

from __future__ import annotations

import streamlit as st

REPORT_HELP = (
    "Every tensor in the model's files is used, proved redundant (a copy of the tied embeddings, a buffer that "
    "holds no learned number) or named as left out with what it is; none left out changes what a page shows. A "
    "tensor no rule accounts for refuses the load."
)


def _escaped(text: str) -> str:
    """Markdown-safe: file and tensor names keep their underscores and stars."""
    return "".join("\\" + ch if ch in "\\`*_[]<>#|" else ch for ch in text)


def draw_status(slot, loaded, obs, cache: tuple[int, int] | None = None, whole: str | None = None) -> None:
    """The loaded model's description, its warnings, what this text cost, and how full the shared cache is
    (``cache``: bytes held, budget); ``whole``: what reading a long text whole cost."""
    desc = loaded.description
    with slot:
        with st.expander(f"About: {desc['name']}", expanded=False):
            st.markdown(
                f"**{desc['architecture']}**  \n{desc['parameters']:,} parameters · {desc['positional']} positions · "
                f"{desc['norm']} · {desc['activation']} · max {desc['max_seq_len']} tokens"
                + (" · MLM head" if desc["mlm_head"] else "")
                + (f" · {desc['kv_heads']} key/value heads (GQA)" if desc["kv_heads"] != desc["heads"] else "")
                + (" · causal, next-token head" if desc["decoder"] else "")
            )
            st.caption(f"Source: {desc['source']}")
            if desc["family"]:
                st.caption(f"Read as {desc['family']}.")
            lines = loaded.report.summary()
            if lines:  # what was read from which files, and what became of every tensor
                st.markdown("\n".join(f"- {_escaped(line)}" for line in lines), help=REPORT_HELP)
        for w in loaded.warnings:
            st.warning(w)
        st.caption(
            f"{len(obs.tokens)} tokens · forward + capture {obs.forward_ms:.0f} ms on {obs.device} · "
            f"captured {obs.capture_bytes / 2**20:.1f} MiB"
            + (f" · shared cache {cache[0] / 2**20:.0f} of {cache[1] / 2**20:.0f} MiB" if cache else "")
        )
        if whole:
            st.caption(whole)
