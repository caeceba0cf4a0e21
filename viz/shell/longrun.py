"""A text longer than the patterns kept in memory (model/long.py's LONG_FROM), read whole in the background: one job
per (model, device, tokens, options), shared by everyone who opens it, with its progress on the page and a Cancel
button. Its result lives in the shared cache like every other analysis (viz/shell/budget.py).

Three phases: the fused forward pass that keeps q and k (the attention map can draw from then on, a head computed
when it is shown), every head's thumbnail for the model overview (0.33 s a layer of SmolLM2 at 8,192 tokens: an
overview opened later draws at once), then the summary of every head (head metrics, sinks and Find heads need it).
"""

from __future__ import annotations

import time
from collections.abc import Callable

import streamlit as st
from streamlit.runtime.scriptrunner import get_script_run_ctx

from model.long import LONG_FROM, LongObservation
from model.memory import RESERVE, release_freed_memory
from model.whole import prepare_long, read_long
from viz.figures.overview import THUMB as OVERVIEW_THUMB
from viz.shell import jobs
from viz.shell.cache import CACHE
from viz.shell.context import PageContext

READ, SUMMARY = "Reading the whole text", "Measuring every head"
THUMBNAILS = "Drawing every head's thumbnail"
WHOLE = "whole text"  # what a page that reads the whole text says in its title's help
#: how long the progress fragment waits for what its page needs before it draws the bar (it reruns every second)
WAIT_S = 0.8


def reads_whole(ctx: PageContext) -> bool:
    """Whether this text is longer than the patterns kept for pages (and the model reads more of it). Not with
    learned attention sinks (gpt-oss) or position inside the scores (T5, MPNet, DeBERTa): the whole-text reader does
    not carry them, so the pages keep the first tokens, exactly (the observation's notice says so)."""
    obs, cfg = ctx.obs, ctx.loaded.model.cfg
    return (
        not cfg.not_read_whole
        and obs.truncated
        and min(obs.n_tokens_full, cfg.max_seq_len) > LONG_FROM
        and cfg.max_seq_len > LONG_FROM
    )


def whole_section(ctx: PageContext) -> LongObservation | None:
    """A page section that reads a long text whole (once every head is measured), and says so under its title;
    None for a text whose every pattern fits in memory."""
    if not reads_whole(ctx):
        return None
    long = long_observation(ctx, summary=True)
    st.caption(f"Marked “{WHOLE}”: this section reads all {long.n_tokens:,} tokens.")
    return long


def whole_status(ctx: PageContext) -> str | None:
    """The sidebar's line about the text read whole, once it is (None before, or for a short text)."""
    long = CACHE.peek(_key(ctx)) if reads_whole(ctx) else None
    if long is None:
        return None
    if not long.complete:
        return f"whole text: {long.n_tokens:,} tokens · still being read (its pages show how far)"
    measured = f"{long.summarised} of {long.n_layers} layers measured" if long.summarised < long.n_layers else ""
    return (
        f"whole text: {long.n_tokens:,} tokens · fused forward {long.forward_ms / 1000:.1f} s · q and k "
        f"{long.nbytes / 2**20:,.0f} MiB" + (f" · {measured}" if measured else "")
    )


def _key(ctx: PageContext) -> tuple:
    options = ctx.options
    run = (options.causal, options.scale, options.positions, options.ablate)  # every option the whole pass takes
    return ("long", ctx.spec, ctx.device, ctx.obs.text, *run)


def _start(ctx: PageContext) -> jobs.Job:
    key, loaded = _key(ctx), ctx.loaded
    text, options = ctx.obs.text, ctx.options
    model = loaded.model

    def work(job: jobs.Job) -> None:
        with RESERVE.held_off():  # no memory kept touched beside this run's peak (model/memory.py)
            read_whole(job)

    def read_whole(job: jobs.Job) -> None:
        job.report(0, model.cfg.n_layers, READ)
        release_freed_memory()  # what the pages' short pass of this text freed, before 0.75 GB of q and k arrive
        long = prepare_long(model, loaded.tokenizer, text, options)
        _keep(key, long)  # in the cache from the start: a page draws each layer as soon as it is read
        try:
            read_long(long, model, options, _reporter(job), long.turns.behind(job.stop.is_set))  # pages first
        except BaseException:
            CACHE.discard(key)  # half read: nobody may take it for the whole text
            raise
        _keep(key, long)  # sized again with its final hidden states
        job.report(0, long.n_layers, THUMBNAILS)  # the model overview's, before the summary: drawn at once later
        long.thumbnails(OVERVIEW_THUMB, _reporter(job), job.stop.is_set)
        job.report(0, long.n_layers, SUMMARY)
        long.summarise(_reporter(job), job.stop.is_set)
        _keep(key, long)  # sized again with its summaries

    return jobs.run(key, "long", model.cfg.n_layers, work, name=f"{len(text)}-chars")


def _reporter(job: jobs.Job):
    """``job.report`` after every layer, once the memory freed meanwhile is handed back: the server lets each
    thread's heap keep up to 1 GB of freed memory for its next short pass (model/memory.py), and a long run's
    layers, with the pages drawing them meanwhile, would pile it up (SmolLM2 at 8,192 tokens: 0.2 GB at the peak)."""

    def report(done: int, total: int) -> None:
        release_freed_memory()
        job.report(done, total)

    return report


def _keep(key: tuple, long: LongObservation) -> None:
    CACHE.put(key, long)
    if key not in CACHE:
        raise MemoryError(
            f"this text's q and k take {long.nbytes / 2**20:,.0f} MiB, more than the server's whole cache budget "
            f"({CACHE.budget / 2**20:,.0f} MiB): raise ATTENTION_LAB_CACHE_MB or use a shorter text"
        )


def _ready(found: LongObservation | None, summary: bool, layer: int | None) -> bool:
    """Whether what a page needs of the text read whole is there: ``layer``'s q and k (the rest may still be read),
    else the whole pass, and with ``summary`` every head measured too."""
    if found is None:
        return False
    if summary:
        return found.complete and found.summarised == found.n_layers
    return found.complete if layer is None else found.ready > layer


def long_observation(ctx: PageContext, *, summary: bool = False, layer: int | None = None) -> LongObservation:
    """This text read whole, once what the page needs of it is ready: ``layer``'s q and k (a page that shows one
    layer draws it while the pass reads the next ones), else the whole pass (``summary``: every head measured
    too). Until then the page shows the run's progress with a Cancel button and stops here; the run starts on
    the first visit."""
    key = _key(ctx)
    found, job = CACHE.peek(key), jobs.job_for(key)
    if job is not None and job.finished and job.let_go:
        job = None  # stopped while nobody watched it (jobs.LET_GO): read again for whoever asks now
    if found is not None and not found.complete and (job is None or job.finished):
        CACHE.discard(key)  # half read with no pass going on (a failed pass takes its own away): never drawn
        found = None
    if _ready(found, summary, layer):
        ctx.source.read_whole(found, key)
        if not found.complete:  # this layer is drawn while the pass reads the later ones: its progress, Cancel
            _progress(key, False, None, page_goes_on=True)
        return found
    if job is not None and job.finished:
        if job.error:
            st.error(f"Reading the whole text failed: {job.error}")
        elif job.cancelled:
            st.warning("Reading the whole text was cancelled.")
        else:  # read, then let go by the cache: say so rather than read it again and again
            st.warning(
                f"This text read whole left the server's shared cache ({CACHE.budget / 2**20:,.0f} MiB, "
                "ATTENTION_LAB_CACHE_MB) to make room for other pages' work."
            )
        if not st.button("Read the whole text again", key="long_again", icon=":material/replay:"):
            st.stop()
        job = None
    if job is None or job.finished:
        job = _start(ctx)
    _progress(key, summary, layer)
    st.stop()
    raise AssertionError  # st.stop() does not return


@st.fragment(run_every=1.0)
def _progress(key: tuple, summary: bool, layer: int | None, page_goes_on: bool = False) -> None:
    """Redrawn every second while the run goes on (other users and pages are not blocked); the page reruns once
    what it needs is ready. ``page_goes_on``: the page draws on below the bar (what it shows is read already)."""
    job = jobs.job_for(key)
    progress_of(job, "layer", lambda: _ready(CACHE.peek(key), summary, layer), page_goes_on)


def progress_of(
    job: jobs.Job | None, unit: str, ready: bool | Callable[[], bool] = False, page_goes_on: bool = False
) -> None:
    """A job's progress bar and Cancel button (inside a fragment that reruns every second); the whole page reruns
    once the job is over or ``ready`` (what the page needs exists). A callable ``ready`` is then waited for up to
    :data:`WAIT_S`, woken by the job's reports: the page reruns when the layer it shows is read, not up to a
    second later at the fragment's next tick. Not in the page's own run when ``page_goes_on``: the rest of the
    page would wait behind the bar (a map drawn during a read came 0.8 s late)."""
    check = ready if callable(ready) else (lambda: ready)
    if job is None or job.finished or check():
        st.rerun()
    elapsed = time.perf_counter() - job.started
    if job.queued:
        text = f"Waiting for a free place: {job.ahead} long run(s) ahead of this one."
    else:
        text = f"{job.phase}: {unit} {job.done} of {job.total} · {elapsed:.0f} s"
    st.progress(job.done / max(job.total, 1), text=text)
    if st.button("Cancel", key=f"cancel_{job.kind}", icon=":material/stop:"):
        job.stop.set()
    # drawn first, then waited for: the bar and the button are this run's while it waits, so the browser does not
    # fade them as stale (a second-long transition, redrawn every frame, every second, on the cores of the pass)
    waits = callable(ready) and not job.stop.is_set() and (_rerun_of_fragment() or not page_goes_on)
    if waits and job.wait_for(lambda: job.finished or check(), WAIT_S):
        st.rerun()


def _rerun_of_fragment() -> bool:
    """Whether this script run reruns fragments alone (the page's other elements are not being drawn)."""
    ctx = get_script_run_ctx(suppress_warning=True)
    return bool(ctx is not None and ctx.fragment_ids_this_run)


def window_picker(long: LongObservation) -> tuple[int, ...]:
    """Query and key ranges to draw exactly ((): the whole text as block means), kept in ``attn_window``."""
    n = long.n_tokens
    state = st.session_state
    current = list(state["attn_window"]) or [0, n, 0, n]
    with st.expander(
        f"Window: all {n:,} tokens" if not state["attn_window"] else
        f"Window: queries {current[0]:,}–{current[1] - 1:,} × keys {current[2]:,}–{current[3] - 1:,}",
        expanded=bool(state["attn_window"]), icon=":material/zoom_in:",
    ):  # fmt: skip
        st.caption(
            f"The whole text is drawn as block means of {long.width} × {long.width} tokens. Narrow the queries and "
            f"keys to see exact weights (up to 160 tokens a side; a wider window is drawn as block means of exact "
            "weights); hover names every cell."
        )
        st.radio(
            "Each cell of the whole text shows", ("mean", "max"), horizontal=True, key="attn_cells",
            format_func={"mean": "the mean weight of its block", "max": "the largest weight in its block"}.get,
            help="Block means keep each row's total; the largest weight finds a single strong link a mean dilutes.",
        )  # fmt: skip
        rows = st.slider("Queries (rows)", 0, n, (current[0], current[1]), key="attn_rows")
        cols = st.slider("Keys (columns)", 0, n, (current[2], current[3]), key="attn_cols")
        chosen = [*rows, *cols] if rows[1] > rows[0] and cols[1] > cols[0] else []
        state["attn_window"] = [] if chosen == [0, n, 0, n] else chosen
    return tuple(state["attn_window"])


def focus_picker(long: LongObservation) -> None:
    """The query (and key) in focus by position: a long text has too many tokens for chips."""
    n = long.n_tokens
    cols = st.columns(2)
    for col, name, label in ((cols[0], "focus_query", "Query in focus"), (cols[1], "focus_key", "Key in focus")):
        col.number_input(
            f"{label} (token position, −1: none)", -1, n - 1, key=name,
            help="Its exact row (query) or column (key) is named under the map.",
        )  # fmt: skip
    q = st.session_state["focus_query"]
    if 0 <= q < n:
        st.caption(f"Query in focus: “{long.tokens[q]}” at {q:,}.")
