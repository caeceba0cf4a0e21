"""Watch it learn: train a small transformer here and scrub through the moment its heads form (Olsson et al.,
2022: induction heads appear in a sudden phase change, a bump in the loss). Training runs in the background,
one run per spec shared by everyone who opens it; the finished model opens on every other page."""

import streamlit as st

from model.learn.loop import TrainSpec
from model.learn.store import describe, probe_texts, to_bytes, tokenizer_of
from model.learn.tasks import TASKS
from viz.export.animation import gif, mp4, render_frames
from viz.export.render import image_export_available
from viz.settings import LEARN_POSITIONS, LEARN_TASKS, YOUR_TEXT
from viz.shell import training
from viz.shell.context import page_context
from viz.shell.widgets import clicked, follow_open_page, open_page, show_view
from viz.views.learn import SCORES, Progress, frame, score_label, summary

MAX_FRAMES = 40  # an exported animation thins the snapshots to at most this many frames
ctx = page_context()
follow_open_page()
st.title("Watch it learn")
st.caption(
    "Train a small transformer in front of the class and watch its heads form. Olsson et al. (2022) found that "
    "induction heads appear in a sudden phase change, visible as a bump in the loss. Choose a task and a model, "
    "press Train, then scrub through the snapshots. Every run is seeded: the same settings train the same model, "
    "and a link to this page shows everyone the same run."
)


def suggest_model() -> None:
    """A new task brings the model it is usually taught with: masked words the post's encoder (sinusoidal
    positions, feed-forward), the token tasks an attention-only model with RoPE."""
    task = st.session_state["learn_task"]
    st.session_state["learn_positional"] = "sinusoidal" if task in ("mlm", "dates") else "rope"
    st.session_state["learn_ff"] = task == "mlm"


with st.expander("Task and model", expanded=True):
    task = st.selectbox(
        "Task", LEARN_TASKS, format_func=lambda k: TASKS[k].title, key="learn_task", on_change=suggest_model
    )
    st.caption(TASKS[task].description)
    c = st.columns(4)
    layers = c[0].number_input("Layers", 1, 4, key="learn_layers")
    n_heads = c[1].number_input("Heads", 1, 8, key="learn_heads")
    d_model = c[2].number_input("d_model", 16, 256, step=16, key="learn_d_model")
    steps = c[3].number_input("Steps", 100, 20000, step=100, key="learn_steps")
    c = st.columns(4)
    positional = c[0].selectbox("Positions", LEARN_POSITIONS, key="learn_positional")
    norm = c[1].selectbox("Norm", ("pre", "post"), format_func=lambda n: f"{n}-norm", key="learn_norm")
    lr = c[2].select_slider("Learning rate", (0.0003, 0.001, 0.003, 0.01), key="learn_lr")
    seed = c[3].number_input("Seed", 0, 10_000, key="learn_seed")
    ff = st.toggle("Feed-forward sublayers (off: attention-only, as Olsson et al.'s small models)", key="learn_ff")

try:
    spec = TrainSpec(
        task=task, n_layers=int(layers), n_heads=int(n_heads), d_model=int(d_model), positional=positional,
        feed_forward=bool(ff), norm=norm, steps=int(steps), lr=float(lr), seed=int(seed),
    )  # fmt: skip
    spec.config()  # d_model must split into the heads
except ValueError as exc:
    st.error(f"These settings do not make a model: {exc}")
    st.stop()

st.caption(f"Run {spec.key}: {describe(spec)}.")


def estimate(spec: TrainSpec) -> float:
    """Seconds the run should take on this machine's 2 cores: 60 training steps a second for the default, slower in
    proportion to layers × d_model² and a feed-forward (× 1.5), the corpus task about 8 × slower, plus the rest a
    run takes after each step (ATTENTION_LAB_TRAIN_REST). Measured on 2026-12-02: 1,500 default steps through the
    page's job took 43.8 s (29 s training, the rest resting); 300 steps of the corpus run with feed-forward 49 s
    of training."""
    work = spec.n_layers / 2 * max(1.0, (spec.d_model / 64) ** 2) * (1.5 if spec.feed_forward else 1.0)
    return spec.steps / 60 * work * (8 if spec.task == "mlm" else 1) * (1 + training.REST)


def controls(job) -> None:
    """Progress, the queue, and Pause / Resume / Cancel of a running job."""
    if job.queued:
        st.info(f"Waiting for a free place: {job.ahead} run(s) ahead of this one (runs train one at a time).")
    done = job.done / max(job.total, 1)
    paused = training.is_paused(spec)
    st.progress(done, text=f"{'Paused at' if paused else 'Training:'} step {job.done:,} of {job.total:,}")
    row = st.container(horizontal=True, gap="small")
    if paused:
        row.button("Resume", key="learn_resume", on_click=training.pause, args=(spec, False),
                   icon=":material/play_arrow:")  # fmt: skip
    else:
        row.button("Pause", key="learn_pause", on_click=training.pause, args=(spec, True), icon=":material/pause:")
    row.button("Cancel", key="learn_cancel", on_click=training.cancel, args=(spec,), icon=":material/stop:")


def view(kind: str, progress: Progress, **selection):
    """A view of this run, shared by everyone watching it (viz.shell.training.learn_view)."""
    newest = int(progress.steps[-1])  # what every view of the run draws: the snapshots up to this step
    return training.learn_view(
        kind, progress.run.spec.key, len(progress.snaps), newest, ctx.theme, progress, **selection
    )


def chosen_head(progress: Progress) -> tuple[int, int]:
    """The head in focus: the one clicked or picked, else the one with the highest task score now."""
    layer, head = st.session_state.get("learn_layer", -1), st.session_state.get("learn_head", -1)
    cfg = progress.run.model.cfg
    if 0 <= layer < cfg.n_layers and 0 <= head < cfg.n_heads:
        return int(layer), int(head)
    return progress.best_head()


def pick_head(chart_key: str) -> None:
    points = clicked(chart_key)
    if points:
        st.session_state["learn_layer"], st.session_state["learn_head"] = (int(v) for v in points[0][:2])


def scrub(progress: Progress, page_head: tuple[int, int] | None = None) -> None:
    """The slider over the snapshots, every head at that step, the chosen head large, and the curves. Run as a
    fragment (a step change redraws only these); ``page_head``: the head the rest of the page shows, which a
    click on another head makes the whole page follow."""
    if page_head is not None and chosen_head(progress) != page_head:
        st.rerun(scope="app")
    steps = [int(s) for s in progress.steps]
    at_end = st.session_state.get("learn_step") == st.session_state.get("_learn_last")
    if st.session_state.get("learn_step") not in steps or at_end:  # left at the newest: follow the training
        st.session_state["learn_step"] = steps[-1]
    st.session_state["_learn_last"] = steps[-1]
    step = st.select_slider("Step", steps, key="learn_step", format_func=lambda s: f"{s:,}")
    index = progress.index_of(step)
    chosen = chosen_head(progress)
    score = st.selectbox("Score drawn", SCORES, key="learn_score", format_func=lambda s: score_label(progress, s))
    show_view(view("curves", progress, now=step, chosen=chosen, score=score), "learn_curves_fig")
    left, right = st.columns([1, 1])
    with left:
        grid = view("heads", progress, index=index, chosen=chosen)
        show_view(grid, "learn_heads_fig", on_select=lambda: pick_head("learn_heads_fig"), selection_mode="points")
    with right:
        show_view(view("frame", progress, index=index, chosen=chosen), "learn_frame_fig")


@st.fragment(run_every=2.0)
def live() -> None:
    """Redrawn every two seconds while the run trains; the rest of the page and every other user are not held up."""
    job = training.job_of(spec)
    if job is None or job.finished:
        st.rerun()
    training.watch(spec)  # someone is looking: the run keeps its place
    controls(job)
    run = training.live_run(spec)
    if run is not None and run.view():
        progress = Progress(run)
        scrub(progress)


@st.fragment(run_every=2.0)
def watched() -> None:
    """A run training on another replica of this server (its live file in the shared runs folder), redrawn every
    two seconds from the file; once it is finished (or its server stopped) the whole page runs again."""
    remote = training.elsewhere(spec)
    if remote is None:
        st.rerun()
    done = len(remote.losses)
    st.progress(done / spec.steps, text=f"Training on another replica of this server: step {done:,} of {spec.steps:,}")
    st.caption("Pause and Cancel are on the page of whoever started it; this page follows the run as it goes.")
    scrub(Progress(remote))


job = training.job_of(spec)
run = training.run_of(spec)
if job is not None and job.running:
    live()
    st.stop()
if run is None and training.elsewhere(spec) is not None:
    watched()
    st.stop()
if job is not None and job.cancelled and run is None:
    st.info(f"Run {spec.key} was cancelled at step {job.done:,}; nothing of it was kept.")
elif job is not None and job.error:
    st.error(f"The run stopped: {job.error}")
stopped = training.stopped_run(spec) if run is None else None
if stopped is not None:
    so_far, why = stopped
    st.info(
        f"Run {spec.key} stopped at step {so_far.step:,} of {spec.steps:,}: {why}. Its snapshots so far are below; "
        "it goes on from that step exactly as if it had not stopped.",
        icon=":material/pause_circle:",
    )
    st.button(f"Resume from step {so_far.step:,}", key="learn_resume_stopped", type="primary",
              on_click=training.start_training, args=(spec, True), icon=":material/play_arrow:")  # fmt: skip
    st.fragment(scrub)(Progress(so_far))
    st.stop()
if run is None:
    st.button(f"Train (about {estimate(spec):.0f} s on 2 cores)", key="learn_train", type="primary",
              on_click=training.start_training, args=(spec,), icon=":material/model_training:")  # fmt: skip
    st.stop()

progress = Progress(run)
chosen = chosen_head(progress)
st.subheader("What happened")
st.markdown(summary(progress))
st.caption(
    f"Trained in {run.seconds:.1f} s, of which snapshots {run.snapshot_seconds:.1f} s "
    f"({run.snapshot_seconds / max(run.seconds, 1e-9):.1%}); {len(progress.snaps)} snapshots on a held-out probe "
    "batch. Click a thumbnail to choose a head."
)
st.fragment(scrub)(progress, chosen)
st.subheader("Before, at and after")
show_view(view("moments", progress, chosen=chosen), "learn_moments_fig")

st.subheader("Take it away")
layer, head = chosen
frames_at = sorted({round(i * (len(progress.snaps) - 1) / (MAX_FRAMES - 1)) for i in range(MAX_FRAMES)})
stem = frame(progress, ctx.theme, index=0, chosen=chosen).name.rsplit("_step", 1)[0]
out = st.container(horizontal=True, gap="small")
if image_export_available():
    size = st.session_state.get("export_size", "screen")

    def rendered() -> list[bytes]:
        """Every frame of the scrub, rendered as the PNG export does (built only when a file is asked for)."""
        frames = [frame(progress, ctx.theme, index=i, chosen=chosen) for i in frames_at]
        return render_frames(frames, size=size, caption=True, provenance={"run": spec.key, "model": describe(spec)})

    out.download_button("Scrub as GIF", lambda: gif(rendered(), 0.3), f"{stem}.gif", "image/gif", key="learn_gif",
                        icon=":material/gif:", on_click="ignore")  # fmt: skip
    out.download_button("Scrub as MP4", lambda: mp4(rendered(), 0.3), f"{stem}.mp4", "video/mp4", key="learn_mp4",
                        icon=":material/movie:", on_click="ignore")  # fmt: skip
else:
    st.info("Install Debian's chromium (apt-get install chromium) to export the animation.")


def checkpoint_bytes() -> bytes:
    from model.io.checkpoint import to_bytes as checkpoint

    info = {"name": f"Trained here: {describe(spec)}", "run": spec.key, "steps": run.step}
    return checkpoint(run.model, tokenizer_of(spec), info)


seq2seq = TASKS[spec.task].seq2seq
if not seq2seq:  # a checkpoint holds one transformer; an encoder–decoder is two (the run file keeps both)
    out.download_button(
        "Model checkpoint (.safetensors)",
        checkpoint_bytes,
        f"watch-it-learn_{spec.key}.safetensors",
        "application/octet-stream",
        key="learn_ckpt",
        icon=":material/download:",
        on_click="ignore",
    )
out.download_button(
    "Run with every snapshot",
    lambda: to_bytes(run),
    f"watch-it-learn_{spec.key}_run.safetensors",
    "application/octet-stream",
    key="learn_runfile",
    icon=":material/download:",
    on_click="ignore",
)


def open_model() -> None:
    """Make the trained model the app's model, with a text of its task, and open its chosen head (an
    encoder–decoder: its decoder, reading the probe's source, on the probe's target)."""
    st.session_state["model_kind"], st.session_state["trained_run"] = "trained", spec.key
    tok = tokenizer_of(spec)
    if seq2seq:
        source, text = probe_texts(run)
        st.session_state["trained_stack"], st.session_state["trained_source"] = "decoder", source
    else:
        ids = [int(i) for i in run.probe.ids[0] if int(i) not in tok.special_ids()]
        text = " ".join(tok.id_to_token(i) for i in ids) if TASKS[spec.task].causal else tok.inner.decode(ids)
    st.session_state["example"], st.session_state["text"] = YOUR_TEXT, text
    st.session_state["layer"], st.session_state["head"] = layer, head
    open_page("viz/pages/attention.py")


if seq2seq:
    st.caption(
        "Every page opens the decoder (its causal self-attention, and on Attention map its cross-attention on the "
        "source); the sidebar's Stack switches to the encoder. A checkpoint file holds one transformer: the run "
        "file keeps both stacks."
    )
out.button("Open this model on every page", key="learn_open", on_click=open_model, type="primary",
           icon=":material/open_in_new:")  # fmt: skip
