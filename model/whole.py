"""Reading a text whole: one fused forward pass that keeps each layer's q and k in a
:class:`model.long.LongObservation`, layer by layer, so that a page can draw a layer as soon as it is read.

    long = observe_long(model, tokenizer, text)          # tokenise, then the whole pass
    long = prepare_long(model, tokenizer, text)          # or in two steps: the arrays first (ready 0) …
    read_long(long, model, progress=…, cancel=…)         # … then the pass fills them (ready 1, 2, … L)
"""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np
import torch

from model.analysis.streaming import Cancelled, Rule
from model.intervene import heads_off, hooks
from model.io.tokenizer import Tokenizer
from model.long import LongObservation, Progress
from model.observe import Options
from model.text import encode_text
from model.transformer import Transformer

__all__ = ["capture_qk", "observe_long", "prepare_long", "qk_arrays", "read_long"]


def capture_qk(
    model: Transformer,
    ids: torch.Tensor,
    *,
    causal: bool | None = None,
    scale: bool = True,
    positions: bool = True,
    ablate: tuple[tuple[int, int], ...] = (),
    progress: Progress | None = None,
    cancel: Callable[[], bool] | None = None,
    out: tuple[np.ndarray, np.ndarray] | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One fused forward pass of ids (1, N) keeping q (L, H, N, d_k) and k (L, H_kv, N, d_k), float32 on the CPU,
    and the final hidden states (N, d_model). ``progress(layers done, L)`` after every layer (that layer's q and k
    are then written); ``cancel()`` true stops the pass (raises Cancelled). ``out``: the (q, k) arrays to fill.
    ``ablate``: (layer, head) pairs switched off, their output z zeroed as :func:`model.observe.observe` does."""
    cfg = model.cfg
    n = ids.shape[1]
    q, k = out if out is not None else qk_arrays(cfg, n)

    def keep(into: np.ndarray):
        def hook(t: torch.Tensor, where) -> None:
            into[where.layer] = t[0].detach().to("cpu", torch.float32).numpy()  # (H, N, d_k): one copy, no stack

        return hook

    def step(_t: torch.Tensor, where) -> None:
        if progress is not None:
            progress(where.layer + 1, cfg.n_layers)
        if cancel is not None and cancel():
            raise Cancelled

    plan = [(lambda name: name.endswith("attn.hook_q"), keep(q)), (lambda name: name.endswith("attn.hook_k"), keep(k))]
    plan.append((lambda name: name.startswith("blocks.") and name.endswith(".hook_resid_post"), step))
    dev = next(model.parameters()).device
    with torch.no_grad(), heads_off(model, ablate), hooks(model, plan):
        hidden = model(ids.to(dev), causal=causal, scale=scale, positions=positions, fused=True)
    return q, k, hidden[0].detach().to("cpu", torch.float32).numpy()


def qk_arrays(cfg, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Empty q (L, H, N, d_k) and k (L, H_kv, N, d_k) float32 arrays for a pass of N tokens."""
    q = np.empty((cfg.n_layers, cfg.n_heads, n, cfg.d_k), dtype=np.float32)
    k = np.empty((cfg.n_layers, cfg.kv_heads, n, cfg.d_k), dtype=np.float32)
    return q, k


def observe_long(
    model: Transformer,
    tokenizer: Tokenizer,
    text: str,
    options: Options | None = None,
    progress: Progress | None = None,
    cancel: Callable[[], bool] | None = None,
    max_len: int | None = None,
) -> LongObservation:
    """Read the whole text (up to the model's own limit, or ``max_len`` tokens) with one fused forward pass on the
    model's device. ``options.max_len`` (the patterns pages keep) does not apply here."""
    long = prepare_long(model, tokenizer, text, options, max_len)
    read_long(long, model, options, progress, cancel)
    return long


def prepare_long(
    model: Transformer, tokenizer: Tokenizer, text: str, options: Options | None = None, max_len: int | None = None
) -> LongObservation:
    """The text tokenised and its q and k arrays made, no layer read yet (``ready`` 0): :func:`read_long` fills
    them. Raises ValueError for what the whole-text reader cannot carry, before any work."""
    cfg, options = model.cfg, options or Options()
    if cfg.not_read_whole:  # the pages read its first tokens exactly instead (model/observe.py says so)
        raise ValueError(f"reading a text whole does not carry {cfg.not_read_whole} yet")
    enc, notices = encode_text(tokenizer, text, min(max_len or cfg.max_seq_len, cfg.max_seq_len))
    if bad := [i for i in enc.ids if i >= cfg.vocab_size]:
        raise ValueError(f"token ids {bad[:5]} are outside the model's vocabulary of {cfg.vocab_size}")
    causal = bool(cfg.causal if options.causal is None else options.causal)
    factor = (cfg.attn_scale or cfg.d_k**-0.5) if options.scale else 1.0
    rules = tuple(
        Rule(causal, cfg.sliding_window if cfg.is_sliding(i) else 0, factor, cfg.attn_softcap)
        for i in range(cfg.n_layers)
    )
    q, k = qk_arrays(cfg, len(enc.ids))
    return LongObservation(
        tokens=list(enc.tokens), ids=list(enc.ids), offsets=[tuple(o) for o in enc.offsets],
        special=np.array(enc.special, dtype=bool), text=enc.text, q=q, k=k,
        hidden=np.empty((0, cfg.d_model), dtype=np.float32), causal=causal, rules=rules, forward_ms=0.0,
        notices=notices, ready=0,
    )  # fmt: skip


def read_long(
    long: LongObservation,
    model: Transformer,
    options: Options | None = None,
    progress: Progress | None = None,
    cancel: Callable[[], bool] | None = None,
) -> None:
    """The fused forward pass of :func:`prepare_long`'s observation: each layer's q and k written in place and
    counted in ``long.ready`` as soon as the layer is done (pages may draw it), then the final hidden states."""
    options = options or Options()

    def step(done: int, total: int) -> None:
        long.ready = done  # that layer's q and k are written: a page may read them now
        if progress is not None:
            progress(done, total)

    began = time.perf_counter()
    _, _, hidden = capture_qk(
        model, torch.tensor([long.ids]), causal=options.causal, scale=options.scale, positions=options.positions,
        ablate=options.ablate, progress=step, cancel=cancel, out=(long.q, long.k),
    )  # fmt: skip
    long.forward_ms = (time.perf_counter() - began) * 1000
    long.hidden = hidden
