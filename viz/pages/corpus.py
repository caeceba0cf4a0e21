"""Every head across a corpus: run the bundled held-out documents or your own file through the model in the
background (progress, cancel), then compare heads on any two metrics, see a metric's spread, and read a head's
top documents."""

import streamlit as st

from model.profile.corpus import CorpusError, bundled_documents, corpus_hash, parse_documents
from model.profile.job import COLUMNS, MAX_LEN
from viz.settings import CORPUS_SOURCES
from viz.shell import jobs
from viz.shell.context import page_context
from viz.shell.services import views
from viz.shell.widgets import clicked, layer_head_picker, show_view, unavailable
from viz.views import ViewUnavailableError
from viz.views.corpus import label

ctx = page_context()
st.title("Corpus profiles")
st.caption(
    "A head's behaviour on one sentence rarely matches its behaviour in general (Clark et al., 2019, average "
    "over a corpus). Run many documents through the model, each cut to "
    f"{MAX_LEN} tokens: per head and document the page stores every metric and sink share (parquet on the "
    "server, so the second visit is instant)."
)
cols = st.columns([2, 1])
source = cols[0].radio("Corpus", CORPUS_SOURCES, key="corpus_source", horizontal=True)
limit = cols[1].number_input("Documents (at most)", 10, 5000, step=50, key="corpus_docs")
docs, name, ids = [], "", None
if source == CORPUS_SOURCES[0]:
    docs, name = bundled_documents(), "the bundled held-out documents"
else:
    upload = st.file_uploader("A .txt (paragraphs or lines) or .jsonl file, up to 10 MB", ["txt", "jsonl"],
                              key="corpus_upload", max_upload_size=10)  # fmt: skip
    if upload is not None:
        try:
            (docs, ids), name = parse_documents(upload.getvalue(), upload.name), upload.name
        except CorpusError as exc:
            st.error(f"Could not read this corpus: {exc}")
docs, ids = docs[: int(limit)], ids[: int(limit)] if ids else None
if not docs:
    st.info("Choose a corpus to profile.")
    st.stop()

key = corpus_hash(docs, MAX_LEN, ids)  # hashed once per run (a corpus may be 10 MB)
path = jobs.profile_path(ctx.spec, ctx.loaded, key)
job = jobs.corpus_job(ctx.spec, ctx.device, key)
stored = ctx.source.profile(str(path))


@st.fragment(run_every=1.0)
def progress_panel() -> None:
    """Redrawn every second while the run goes on; the rest of the page (and every other user) is not blocked."""
    current = jobs.corpus_job(ctx.spec, ctx.device, key)
    if current is None:
        return
    if current.finished:
        st.rerun()  # the whole page: its results are ready (or it says why not)
    st.progress(current.done / max(current.total, 1), text=f"{current.done} of {current.total} documents")
    if st.button("Cancel", key="corpus_cancel", icon=":material/stop:"):
        current.stop.set()


if job is not None and job.running:
    progress_panel()
    st.stop()
if job is not None and job.error:
    st.error(f"The corpus run failed: {job.error}")
elif job is not None and job.cancelled and stored is None:
    st.warning("The run was cancelled; nothing was saved.")
if stored is None:
    st.write(f"{len(docs)} document{'s' * (len(docs) != 1)} of {name} on {ctx.loaded.name}: not profiled yet.")
    if st.button("Run the corpus", key="corpus_run", type="primary", icon=":material/play_arrow:"):
        jobs.start_corpus(ctx.spec, ctx.device, ctx.loaded, docs, name, MAX_LEN, ids)
        st.rerun()
    st.stop()

meta = stored.meta
st.success(
    f"{meta['documents']} document{'s' * (meta['documents'] != 1)} of {meta['corpus'] or name} on {meta['model']}: "
    f"profiled in {meta['seconds']} s "
    f"({meta['engine']}, batches of {meta['batch_size']}).",
    icon=":material/check:",
)
cols = st.columns(2)
x = cols[0].selectbox("x", COLUMNS, key="corpus_x", format_func=label)
y = cols[1].selectbox("y", COLUMNS, key="corpus_y", format_func=label)


def pick_head() -> None:
    for layer, head in clicked("corpus_scatter")[:1]:
        st.session_state["layer"], st.session_state["head"] = int(layer), int(head)


try:
    (scatter,) = views(ctx, "corpus.scatter", profile=str(path), x=x, y=y)
    show_view(scatter, "corpus_scatter", on_select=pick_head, selection_mode="points")
    st.caption("Click a head to see its top documents below.")
    metric = st.selectbox("Metric", COLUMNS, key="corpus_metric", format_func=label)
    (spread,) = views(ctx, "corpus.spread", profile=str(path), metric=metric)
    show_view(spread, "corpus_spread")
    st.subheader("One head's top documents")
    layer, head = layer_head_picker(ctx.obs.n_layers, ctx.obs.n_heads)
    (examples,) = views(ctx, "corpus.examples", profile=str(path), layer=layer, head=head, metric=metric)
    show_view(examples, "corpus_examples")
except ViewUnavailableError as exc:
    unavailable(exc)
