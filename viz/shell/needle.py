"""The lesson "Needle in a haystack" on the Lessons page: choose lengths and depths, run the haystacks in the
background (one shared job per model and grid: progress, Cancel, queued behind other long runs), then its three
figures, and a haystack put in the text box so every page can show it."""

from __future__ import annotations

import time

import streamlit as st
import torch

from model.analysis.needle import ANSWER, NEEDLE, QUESTION, filler_text, haystack, needle_grid, seconds
from viz.shell import jobs
from viz.shell.cache import CACHE, shared
from viz.shell.context import PageContext
from viz.shell.longrun import progress_of
from viz.shell.services import views
from viz.shell.source import needle_key
from viz.shell.widgets import open_clicked, show_view, unavailable
from viz.views import ViewUnavailableError

LENGTHS = (256, 512, 1024, 2048, 4096, 8192)
DEPTHS = (0, 10, 25, 50, 75, 90, 100)


@shared("Timing a pass of 128 tokens…")
def fused_seconds(spec, device: str, _model) -> float:
    """Seconds one fused forward pass of 512 tokens takes here (the grid's estimate scales it): a pass of 128 tokens
    after one of 16, times 4 (a pass's time grows with its length: within 3 % of a pass of 512 on SmolLM2 at two
    threads, 8 % under at one; two passes of 512 took 4.7 s on a 64 GFLOP/s host before the button showed)."""
    n = min(128, _model.cfg.max_seq_len)
    dev = next(_model.parameters()).device
    with torch.no_grad():
        _model(torch.zeros(1, min(16, n), dtype=torch.long, device=dev), fused=True)  # the first pass's allocations
        ids = torch.zeros(1, n, dtype=torch.long, device=dev)
        began = time.perf_counter()
        _model(ids, fused=True)
        if dev.type == "cuda":
            torch.cuda.synchronize(dev)
        elif dev.type == "mps":
            torch.mps.synchronize()
        return (time.perf_counter() - began) * 512 / n


def needle_section(ctx: PageContext) -> None:
    st.markdown(
        "Hide a short fact (the **needle**) at some depth of a long text (the **haystack**: the bundled held-out "
        "documents), ask about it at the end, and watch which heads fetch the answer. A head that, at each token "
        "the model writes, looks hardest at that very token inside the needle is a **retrieval head** (Wu et al., "
        f"2024): it copies. Needle: “{NEEDLE.strip()}” Question: “{QUESTION.strip()}”"
    )
    cfg = ctx.loaded.model.cfg
    if not (cfg.causal and cfg.lm_head):
        st.info("This lesson asks a decoder a question: load SmolLM2-135M-Instruct (or another decoder) first.")
        return
    c1, c2 = st.columns(2)
    allowed = [n for n in LENGTHS if n <= cfg.max_seq_len]
    st.session_state["needle_lengths"] = [n for n in st.session_state["needle_lengths"] if n in allowed]
    st.session_state["needle_depths"] = [d for d in st.session_state["needle_depths"] if d in DEPTHS]
    lengths = tuple(sorted(c1.multiselect("Haystack lengths (tokens)", allowed, key="needle_lengths")))
    depths = tuple(sorted(c2.multiselect("Needle depths (% into the haystack)", DEPTHS, key="needle_depths",
                                         format_func=lambda d: f"{d}%")))  # fmt: skip
    if not lengths or not depths:
        st.info("Pick at least one length and one depth.")
        return
    key = needle_key(ctx.spec, ctx.device, lengths, depths)
    if CACHE.peek(key) is None and not _run(ctx, key, lengths, depths):
        return
    try:
        grid, heads, sinks = views(ctx, "lesson.needle", lengths=lengths, depths=depths)
    except ViewUnavailableError as exc:
        unavailable(exc)
        return
    show_view(grid, "needle_map")
    show_view(heads, "needle_heads", on_select=lambda: open_clicked("needle_heads"), selection_mode="points")
    st.caption("Click a head to open it on the attention map (with a haystack in the text box, below).")
    show_view(sinks, "needle_sinks")
    _use_haystack(ctx, lengths, depths)


def _run(ctx: PageContext, key: tuple, lengths, depths) -> bool:
    """Start (or follow) the grid's background run; True once its result is kept."""
    job = jobs.job_for(key)
    if job is not None and job.running:
        _follow(key)
        st.stop()
    if job is not None and job.error:
        st.error(f"The haystacks failed: {job.error}")
    estimate = seconds(lengths, [d / 100 for d in depths], fused_seconds(ctx.spec, ctx.device, ctx.loaded.model))
    n = len(lengths) * len(depths)
    if not st.button(f"Run {n} haystack{'s' * (n > 1)} (about {estimate:.0f} s here)", key="needle_run",
                     type="primary", icon=":material/play_arrow:"):  # fmt: skip
        return False
    model, tokenizer = ctx.loaded.model, ctx.loaded.tokenizer

    def work(job: jobs.Job) -> None:
        job.report(0, n, "Haystacks")
        grid = needle_grid(model, tokenizer, filler_text(), lengths, [d / 100 for d in depths],
                           lambda done, total: job.report(done, total), job.stop.is_set)  # fmt: skip
        CACHE.put(key, grid)

    jobs.run(key, "long", n, work, name="needle")
    st.rerun()
    return False


@st.fragment(run_every=1.0)
def _follow(key: tuple) -> None:
    progress_of(jobs.job_for(key), "haystack", ready=CACHE.peek(key) is not None)


def _use_haystack(ctx: PageContext, lengths, depths) -> None:
    """Put one haystack in the text box: the attention map then shows a retrieval head on it whole."""
    c1, c2 = st.columns(2)
    n = c1.selectbox("A haystack for the text box", lengths, key="needle_pick_length",
                     format_func=lambda v: f"{v:,} tokens")  # fmt: skip
    d = c2.selectbox("its needle's depth", depths, key="needle_pick_depth", format_func=lambda v: f"{v}%")

    def use() -> None:
        hay = haystack(ctx.loaded.tokenizer, filler_text(), n, d / 100)
        st.session_state["text"] = hay.text
        st.session_state["focus_query"] = len(hay.ids) - 1  # the answer position …
        st.session_state["focus_key"] = hay.answer[0]  # … and the answer's first token in the needle

    st.button(
        f"Put this haystack in the text box, the answer position in focus (“{ANSWER.split()[0]}” in the needle)",
        key="needle_use", on_click=use, icon=":material/content_copy:",
    )  # fmt: skip
