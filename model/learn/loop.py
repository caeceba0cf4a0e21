"""Training a small transformer while recording how its attention forms (issue 32, "Watch it learn").

``train(spec)`` builds the model the spec describes, trains it with AdamW on the task's batches, and every
``snapshot_every`` steps records a :class:`Snapshot` on the held-out probe batch: loss, accuracy, every head's
task score, previous-token score, attention to the first token and entropy, and the patterns of the first probe
sequence (float16). Everything is seeded from ``spec.seed`` (the model's initial weights, the batches, the probe),
so a run repeats exactly on the same machine and thread count.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field

import torch
import torch.nn.functional as F

from model.analysis.metrics import head_metrics
from model.capture import run_with_cache
from model.config import TransformerConfig
from model.encdec import EncoderDecoder
from model.learn.tasks import PAD, TASKS, Batch, batch, head_scores, vocabulary
from model.long import Cancelled  # the jobs' cancel signal: the run is dropped, nothing of it kept
from model.transformer import Transformer

PROBE_SEED = 1_000_003  # the probe batch's own seed: held out from every training batch
PROBE_SIZE = 32  # sequences: a snapshot is one captured forward pass over them (about 6 ms in the default run)
APP_METRICS = ("mean_distance", "self", "next", "max_weight")  # Head metrics' own, beside the scores above
SNAPSHOT_BUDGET = 64 * 2**20  # bytes of snapshots a run keeps; beyond it every other old snapshot is dropped


@dataclass(frozen=True)
class TrainSpec:
    """A run, as the page's controls choose it (its ``key`` names the run: the same spec trains the same model)."""

    task: str = "induction"
    n_layers: int = 2
    n_heads: int = 4
    d_model: int = 64
    positional: str = "rope"  # "rope", "learned", "sinusoidal" or "none"
    feed_forward: bool = False  # False: attention-only, as Olsson et al.'s small models
    norm: str = "pre"
    steps: int = 1500
    batch: int = 32
    lr: float = 3e-3
    seed: int = 0
    snapshot_every: int = 40  # snapshots then cost 1.5 % of training time (bench/learn.py); 39 frames, a GIF's cap

    def __post_init__(self) -> None:
        if self.task not in TASKS:
            raise ValueError(f"unknown task {self.task!r}; choose one of {sorted(TASKS)}")
        if self.snapshot_every < 1 or self.steps < 1:
            raise ValueError("steps and snapshot_every must be at least 1")

    @property
    def key(self) -> str:
        """A short name of the run (12 hex digits of its spec)."""
        text = json.dumps(asdict(self), sort_keys=True)
        return hashlib.sha256(text.encode()).hexdigest()[:12]

    def config(self) -> TransformerConfig:
        task = TASKS[self.task]
        if task.causal:
            vocab, extra = len(vocabulary()), {"causal": True, "lm_head": True, "scale_embeddings": False}
        else:
            from model.learn.tasks import corpus_stream

            vocab, extra = corpus_stream()[1].vocab_size, {"mlm_head": True}
        return TransformerConfig(
            vocab_size=vocab, d_model=self.d_model, n_heads=self.n_heads, n_layers=self.n_layers,
            d_ff=4 * self.d_model, max_seq_len=max(task.seq_len, 64), dropout=0.0, norm=self.norm,
            positional=self.positional, attn_only=not self.feed_forward, pad_token_id=PAD, **extra,
        )  # fmt: skip


@dataclass
class Snapshot:
    """The probe batch at one step: ``scores`` maps a score's name to (L, H); ``patterns`` (L, H, N, N) float16 of
    the first probe sequence."""

    step: int
    loss: float
    accuracy: float
    scores: dict[str, torch.Tensor]
    patterns: torch.Tensor
    seconds: float = 0.0  # training time when it was taken (pauses not counted)

    @property
    def nbytes(self) -> int:
        return self.patterns.numel() * 2 + sum(s.numel() * 4 for s in self.scores.values()) + 32


@dataclass
class Run:
    """A training run as it goes: per-step training loss, the snapshots, the model (trained in place)."""

    spec: TrainSpec
    model: Transformer
    probe: Batch
    losses: list[float] = field(default_factory=list)
    snapshots: list[Snapshot] = field(default_factory=list)
    seconds: float = 0.0  # training time so far (pauses not counted)
    snapshot_seconds: float = 0.0  # of which recording snapshots
    stride: int = 1  # snapshots kept every stride × snapshot_every steps (doubles when the budget is reached)
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    # while it trains: the optimizer and the batches' generator (model.learn.store writes them into a run that can
    # be resumed); read back: their state, which train() continues from
    opt: torch.optim.Optimizer | None = field(default=None, repr=False)
    gen: torch.Generator | None = field(default=None, repr=False)
    resume: dict | None = field(default=None, repr=False)

    @property
    def step(self) -> int:
        return len(self.losses)

    def keep(self, snap: Snapshot, last: bool = False) -> None:
        """Add a snapshot. Past the byte budget every other one is dropped and from then on only every other new
        one is kept (the spacing doubles), so the snapshots stay evenly spread over the run; ``last`` is kept
        always."""
        with self.lock:
            if (snap.step // self.spec.snapshot_every) % self.stride and not last:
                return
            self.snapshots.append(snap)
            while sum(s.nbytes for s in self.snapshots) > SNAPSHOT_BUDGET and len(self.snapshots) > 2:
                end = self.snapshots[-1]
                self.snapshots = self.snapshots[::2]
                if last and self.snapshots[-1] is not end:
                    self.snapshots.append(end)
                self.stride *= 2

    def view(self) -> list[Snapshot]:
        """The snapshots so far (a copy of the list: the training thread may add one meanwhile)."""
        with self.lock:
            return list(self.snapshots)


def losses_of(model: Transformer, data: Batch, causal: bool) -> tuple[torch.Tensor, torch.Tensor]:
    """Mean cross-entropy over the scored positions, and the (N_scored,) correctness of the argmax there."""
    hidden = model(data.ids) if data.source is None else model(data.source, data.ids)  # (B, N, d_model)
    return scored_loss(model, hidden, data.labels, causal)


def scored_loss(model, hidden: torch.Tensor, labels: torch.Tensor, causal: bool):
    """hidden (B, N, d_model), labels (B, N) -> the mean cross-entropy over scored positions and their correctness."""
    scored = labels != -100  # (B, N)
    # the vocabulary head only where a label is scored (K positions): masked words are 15 % of a window, and the
    # head over the bundled vocabulary costs more than the whole model at every position
    h = hidden[scored]  # (K, d_model)
    logits = model.lm_logits(h) if causal else model.mlm_logits(h)  # (K, V)
    return F.cross_entropy(logits, labels[scored]), logits.argmax(-1) == labels[scored]


@torch.no_grad()
def snapshot(model: Transformer, probe: Batch, step: int, causal: bool) -> Snapshot:
    """Measure the model on the probe batch: its loss and accuracy, every head's scores and the first sequence's
    patterns."""
    was = model.training
    model.eval()
    try:
        if probe.source is not None:  # an encoder–decoder: the decoder's cross-attention (B, L, H, T, S)
            pattern = model.cross_patterns(probe.source, probe.ids)
            loss, right = losses_of(model, probe, causal)
        else:
            hidden, cache = run_with_cache(model, probe.ids, kinds=("pattern",))
            pattern = torch.stack([cache[f"blocks.{i}.attn.hook_pattern"] for i in range(model.cfg.n_layers)], 1)
            # pattern: (B, L, H, N, N)
            loss, right = scored_loss(model, hidden, probe.labels, causal)
        loss, accuracy = float(loss), float(right.float().mean())
        n = pattern.size(-2)
        prev = torch.full_like(probe.target, -1)  # self-attention: the previous token; cross: the same position
        prev[:, 1:] = (
            torch.arange(n - 1) if probe.source is None else torch.arange(1, n).clamp(max=pattern.size(-1) - 1)
        )
        first_key = torch.zeros_like(probe.target)
        plogp = pattern.clamp(min=1e-12).log_().mul_(pattern)  # in place: a fresh (B, L, H, N, M) costs 5× more
        task, previous, first = head_scores(pattern, torch.stack((probe.target, prev, first_key)))  # (L, H) each
        scores = {
            "task": task,
            "previous": previous,
            "first": first,
            "entropy": -plogp.sum(-1).mean(dim=(0, 3)),  # (L, H) nats, mean over queries
        }
        shown = pattern[0].numpy()  # (L, H, N, M): the probe sequence the page draws, measured as Head metrics does
        special = probe.special[0].numpy() if probe.special is not None and probe.source is None else None
        kept = head_metrics(shown, special=special)
        scores.update({k: torch.from_numpy(kept[k]) for k in APP_METRICS})
        return Snapshot(step, loss, accuracy, scores, pattern[0].to(torch.float16))
    finally:
        model.train(was)


def build(spec: TrainSpec) -> tuple[Transformer, Batch]:
    """The run's model (seeded initial weights) and its probe batch."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(spec.seed)
        cfg = spec.config()
        model = EncoderDecoder(cfg) if TASKS[spec.task].seq2seq else Transformer(cfg)
    probe = batch(spec.task, torch.Generator().manual_seed(PROBE_SEED + spec.seed), PROBE_SIZE, probe=True)
    return model, probe


def train(
    spec: TrainSpec,
    *,
    run: Run | None = None,
    progress: Callable[[int, int], None] | None = None,
    cancel: Callable[[], bool] | None = None,
    paused: Callable[[], bool] | None = None,
    rest: float = 0.0,
) -> Run:
    """Train ``spec`` to its last step, recording snapshots (the first at step 0, the last at the end). ``run``: a
    fresh :func:`start` whose progress others read meanwhile. ``cancel()`` true raises :class:`Cancelled`;
    while ``paused()`` is true the loop waits (its time not counted); ``rest``: after each step, sleep this
    fraction of the step's time (a server leaves the CPU to its pages). A run read back with its training state
    (``run.resume``: model.learn.store) continues from its last step, exactly as if it had not stopped."""
    run = run or start(spec)
    model, task = run.model, TASKS[spec.task]
    gen = torch.Generator().manual_seed(spec.seed)
    opt = torch.optim.AdamW(model.parameters(), lr=spec.lr, betas=(0.9, 0.98), weight_decay=0.01)
    if run.resume is not None:  # the optimizer's moments and the generator where the run stopped
        opt.load_state_dict(run.resume["opt"])
        gen.set_state(run.resume["gen"])
        run.resume = None
    run.opt, run.gen = opt, gen
    model.train()
    if run.step == 0:
        t0 = time.perf_counter()
        run.keep(snapshot(model, run.probe, 0, task.causal))
        run.snapshot_seconds += time.perf_counter() - t0
    for step in range(run.step + 1, spec.steps + 1):
        while paused is not None and paused():
            if cancel is not None and cancel():
                raise Cancelled
            time.sleep(0.05)
        if cancel is not None and cancel():
            raise Cancelled
        tick = time.perf_counter()
        data = batch(spec.task, gen, spec.batch, step)
        loss, _ = losses_of(model, data, task.causal)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        run.losses.append(float(loss.detach()))
        if step % spec.snapshot_every == 0 or step == spec.steps:
            shot = time.perf_counter()
            snap = snapshot(model, run.probe, step, task.causal)
            snap.seconds = run.seconds + shot - tick
            run.keep(snap, last=step == spec.steps)
            run.snapshot_seconds += time.perf_counter() - shot
        spent = time.perf_counter() - tick
        run.seconds += spent
        if rest:
            time.sleep(rest * spent)
        if progress is not None:
            progress(step, spec.steps)
    model.eval()
    run.opt = run.gen = None
    return run


def start(spec: TrainSpec) -> Run:
    """A run at step 0: the seeded model and probe batch, nothing trained yet."""
    model, probe = build(spec)
    return Run(spec, model, probe)
