"""Text in, everything the dashboard shows out: tokenise, forward, capture, metrics — as numpy.

This is the one place where tensors become numpy arrays (captured activations, a head's weights, the
positional table); the analysis maths and the figures never see torch.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np
import torch

from model.analysis.metrics import head_metrics
from model.capture import run_with_cache
from model.capture_size import capture_bytes
from model.config import TransformerConfig
from model.devices import model_on_cpu
from model.io.tokenizer import Encoded, Tokenizer
from model.rope_scaling import frequencies
from model.text import Placed, encode_text
from model.transformer import Transformer

# raw scores are not captured by default: Observation.score_matrix recomputes one head's from q and k (the
# scores of every head cost as much memory as the patterns: 283 MB for SmolLM2 at 512 tokens)
ATTENTION_KINDS = ("attn_in", "q", "k", "v", "pattern", "z", "attn_out", "sink", "expert_weights")


#: every head's pattern is kept in memory for at most this many tokens (SmolLM2: 283 MB at 512); a longer text is
#: read whole by model/long.py, which keeps q and k and computes a pattern when it is shown
LONG_FROM = 512


@dataclass(frozen=True)
class Options:
    """Per-observation switches. Hashable: part of the cache key."""

    causal: bool | None = None  # None: as the model was built
    scale: bool = True  # divide scores by sqrt(d_k)
    positions: bool = True  # False: no positional signal at all (permutation lab)
    ablate: tuple[tuple[int, int], ...] = ()  # (layer, head) switched off
    max_len: int | None = None  # None: the model's maximum, at most LONG_FROM (ask for more explicitly)
    kinds: tuple[str, ...] = ATTENTION_KINDS  # what to capture


@dataclass
class Observation:
    """Everything one captured forward pass showed, as read-only numpy arrays.

    patterns/scores: (L, H, N, N) float32 (scores -inf where masked; usually None, see :meth:`score_matrix`);
    q, z: (L, H, N, d_k); k, v: (L, H_kv, N, d_k), one per key/value head (:meth:`kv_head` maps a query head to
    its K/V head); attn_in/attn_out: (L, N, d_model); hidden: (N, d_model); metrics: {name: (L, H)}.
    """

    tokens: list[str]
    ids: list[int]
    offsets: list[tuple[int, int]]
    special: np.ndarray  # (N,) bool
    truncated: bool
    n_tokens_full: int
    text: str
    patterns: np.ndarray
    scores: np.ndarray | None
    q: np.ndarray | None
    k: np.ndarray | None
    v: np.ndarray | None
    z: np.ndarray | None
    attn_in: np.ndarray | None
    attn_out: np.ndarray | None
    hidden: np.ndarray
    device: str
    forward_ms: float
    capture_bytes: int
    options: Options
    notices: list[str] = field(default_factory=list)
    causal: bool = False  # the mask this pass used (the model's, or the options' override)
    kv_group: int = 1  # query heads per key/value head (grouped-query attention when > 1)
    windows: tuple[int, ...] = ()  # per layer: its sliding window, 0 for a global layer; (): every layer global
    score_factor: float = 0.0  # what q·k is multiplied by when scaled; 0: 1/√d_k
    softcap: float = 0.0  # the scores were capped to c·tanh(s / c) (Gemma 2); 0: not
    score_terms: bool = False  # scores hold a position term beyond q·k (T5, MPNet, DeBERTa): ``scores`` captured
    cross: np.ndarray | None = None  # (L, H, N, S): a decoder's cross-attention on its source's S tokens
    sink: np.ndarray | None = None  # (L, H, N) each row's share a learned sink takes (gpt-oss): rows sum to 1 − it
    experts: np.ndarray | None = None  # (L_moe, N, E): each expert's router weight on each token, per MoE layer
    c2p: np.ndarray | None = None  # (L, H, N, N): DeBERTa's content→position term of the scores (when captured)
    p2c: np.ndarray | None = None  # (L, H, N, N): its position→content term
    expert_layers: tuple[int, ...] = ()  # the layers ``experts`` holds, in order
    _metrics: dict[str, np.ndarray] | None = field(default=None, repr=False)
    _rows: dict[str, np.ndarray] = field(default_factory=dict, repr=False)
    _finite: np.ndarray | None = field(default=None, repr=False)

    @property
    def finite(self) -> np.ndarray:
        """(L, H) bool: the heads whose weights are all finite, found once (one layer at a time: no temporary)."""
        if self._finite is None:
            self._finite = np.stack([np.isfinite(self.patterns[i]).all(axis=(-2, -1)) for i in range(self.n_layers)])
        return self._finite

    @property
    def metrics(self) -> dict[str, np.ndarray]:
        """Head metrics {name: (L, H)}, computed on first use (0.2 s for SmolLM2's 270 heads at 512 tokens: a
        text change on the attention map does not pay for the metrics page)."""
        if self._metrics is None:
            self._metrics = head_metrics(self.patterns, special=self.special, rows_out=self._rows, sink=self.sink)
        return self._metrics

    @property
    def row_stats(self) -> dict[str, np.ndarray]:
        """Per query row {"entropy", "visible"}: (L, H, N) each, kept from the metrics' pass over every cell."""
        self.metrics  # noqa: B018 - computes them on first use
        return self._rows

    def kv_head(self, head: int) -> int:
        """The key/value head query head ``head`` reads."""
        return head // self.kv_group

    def score_matrix(self, layer: int, head: int) -> np.ndarray:
        """(N, N) float32 scores QKᵀ (÷√d_k unless the options switched it off), −inf where masked: the captured
        ones when scores were captured, otherwise recomputed from the captured q and k."""
        if self.scores is not None:
            return self.scores[layer, head]
        if self.q is None or self.k is None:
            raise ValueError("neither scores nor q and k were captured")
        q, k = self.q[layer, head], self.k[layer, self.kv_head(head)]  # (N, d_k) each
        scores = (q @ k.T).astype(np.float32)  # (N, N)
        if self.options.scale and self.score_factor:
            scores *= np.float32(self.score_factor)
        elif self.options.scale:
            scores /= np.float32(np.sqrt(q.shape[-1]))
        if self.softcap:
            scores = (np.tanh(scores / np.float32(self.softcap)) * np.float32(self.softcap)).astype(np.float32)
        scores[self.blocked(layer)] = -np.inf
        scores.setflags(write=False)
        return scores

    def blocked(self, layer: int) -> np.ndarray:
        """(N, N) bool: the (query, key) cells the mask blocks in ``layer`` (causal, sliding window)."""
        i, j = np.indices((self.n_tokens, self.n_tokens))
        out = (j > i) if self.causal else np.zeros(i.shape, dtype=bool)
        w = self.windows[layer] if self.windows else 0
        if w:  # the layer's sliding window, as the model masks it (model.transformer.Transformer.build_masks)
            out |= (j <= i - w) if self.causal else (np.abs(i - j) > w // 2)
        return out

    @property
    def n_layers(self) -> int:
        return self.patterns.shape[0]

    @property
    def n_heads(self) -> int:
        return self.patterns.shape[1]

    @property
    def n_tokens(self) -> int:
        return self.patterns.shape[2]

    def keep(self, hide_special: bool) -> np.ndarray:
        """Indices of the tokens to show (all of them when every token is special)."""
        idx = np.arange(self.n_tokens)
        return idx[~self.special] if hide_special and (~self.special).any() else idx

    def shown_tokens(self, hide_special: bool) -> list[str]:  # each keeps its text position (model.text.Placed)
        return [Placed(self.tokens[i], i) for i in self.keep(hide_special)]

    def shown(self, matrix: np.ndarray, hide_special: bool) -> np.ndarray:
        """``matrix`` (..., N, N) restricted to the shown tokens on both axes (no copy when all are shown)."""
        k = self.keep(hide_special)
        return matrix if len(k) == self.n_tokens else matrix[..., k, :][..., :, k]


def _np(t: torch.Tensor | None) -> np.ndarray | None:
    if t is None:
        return None
    arr = t.detach().to("cpu", torch.float32).numpy()
    arr.setflags(write=False)  # shared by every user of the cache: never mutated
    return arr


def expected_bytes(model: Transformer, enc: Encoded, options: Options = Options()) -> int:
    """A generous estimate of the bytes :func:`observe` holds at its peak for an encoded text: the activations it
    keeps (``Observation.capture_bytes``) twice, for the pass's temporaries. For admission control (viz/shell/gate)."""
    return 2 * capture_bytes(model.cfg, len(enc), (*options.kinds, "pattern"))


def observe(
    model: Transformer, tokenizer: Tokenizer, text: str, options: Options = Options(), device: str = "cpu"
) -> Observation:
    """Run one captured forward pass on ``device``; an out-of-memory or device error retries on the CPU.

    The model must already live on ``device`` (models are cached per device); on a fallback the
    caller's CPU copy is used through :func:`model_on_cpu`.
    """
    cfg = model.cfg
    enc, notices = encode_text(tokenizer, text, kept_tokens(cfg, options), cfg.max_seq_len)
    return observe_encoded(model, enc, notices, options, device)


def kept_tokens(cfg: TransformerConfig, options: Options) -> int:
    """How many tokens an observation keeps every pattern of: ``options.max_len``, else LONG_FROM, never more than
    the model reads."""
    return min(options.max_len or LONG_FROM, cfg.max_seq_len)


def observe_encoded(
    model: Transformer, enc: Encoded, notices: list[str], options: Options = Options(), device: str = "cpu"
) -> Observation:
    """:func:`observe` of a text already encoded (the app keys its cache by the token ids)."""
    cfg = model.cfg
    ids = torch.tensor([enc.ids], dtype=torch.long)
    if enc.truncated and cfg.not_read_whole:
        notices.append(
            f"This model has {cfg.not_read_whole}, which the whole-text reader does not carry yet: the pages show "
            f"its first {len(enc.ids):,} tokens, read exactly."
        )
    bad = [i for i in enc.ids if i >= cfg.vocab_size]
    if bad:
        raise ValueError(f"token ids {bad[:5]} are outside the model's vocabulary of {cfg.vocab_size}")
    # position inside the scores (a relative bias, DeBERTa's terms) is not in q and k: the scores are captured
    inside = ("scores",) * bool(cfg.relative_bias or cfg.disentangled) + ("cross_pattern",) * cfg.cross_attention
    kinds = tuple(dict.fromkeys((*options.kinds, "pattern", *inside)))
    t0 = time.perf_counter()
    try:
        hidden, trace = _forward(model, ids, kinds, options, device)
    except Exception as exc:  # out of memory, a lost device, a driver error: the CPU still works
        if device == "cpu":
            raise
        notices.append(f"The forward pass failed on {device} ({type(exc).__name__}); it ran on the CPU instead.")
        device = "cpu"
        hidden, trace = _forward(model_on_cpu(model), ids, kinds, options, device)
    forward_ms = (time.perf_counter() - t0) * 1000
    patterns = _np(trace.stack("pattern")[:, 0])  # (L, H, N, N)
    special = np.array(enc.special, dtype=bool)

    def stacked(kind: str) -> np.ndarray | None:
        return _np(trace.stack(kind)[:, 0]) if kind in kinds and trace.layers(kind) else None

    return Observation(
        tokens=list(enc.tokens),
        ids=list(enc.ids),
        offsets=[tuple(o) for o in enc.offsets],
        special=special,
        truncated=enc.truncated,
        n_tokens_full=enc.n_tokens_full,
        text=enc.text,
        patterns=patterns,
        scores=stacked("scores"),
        q=stacked("q"),
        k=stacked("k"),
        v=stacked("v"),
        z=stacked("z"),
        attn_in=stacked("attn_in"),
        attn_out=stacked("attn_out"),
        hidden=_np(hidden[0]),
        device=device,
        forward_ms=forward_ms,
        capture_bytes=trace.nbytes,
        options=options,
        notices=notices,
        causal=bool(cfg.causal if options.causal is None else options.causal),
        kv_group=cfg.group_size,
        windows=cfg.windows,
        score_factor=cfg.attn_scale,
        softcap=cfg.attn_softcap,
        score_terms=bool(cfg.relative_bias or cfg.disentangled) and options.positions,  # off: no bias, no terms
        cross=stacked("cross_pattern"),
        sink=stacked("sink"),
        experts=stacked("expert_weights"),
        c2p=stacked("c2p"),
        p2c=stacked("p2c"),
        expert_layers=tuple(trace.layers("expert_weights")),
    )


def _forward(model: Transformer, ids: torch.Tensor, kinds, options: Options, device: str):
    run = {"causal": options.causal, "scale": options.scale, "positions": options.positions, "ablate": options.ablate}
    # each kind's layers written into one array as they come, not copied into it after the pass (half the memory)
    return run_with_cache(model, ids.to(torch.device(device)), kinds=kinds, stacked=kinds, **run)


def head_weights(model: Transformer, layer: int, head: int) -> dict[str, np.ndarray | None]:
    """One head's slices of W_q, W_k, W_v (d_model, d_k) and of W_o (d_k, d_model), all of W_o
    (d_model, d_model), W_o's bias (d_model,) or None, and its learned sink logit (gpt-oss) or None."""
    attn = model.blocks[layer].attn
    sl = slice(head * attn.d_k, (head + 1) * attn.d_k)
    sl_kv = slice(head // attn.group * attn.d_k, (head // attn.group + 1) * attn.d_k)  # the K/V head it reads

    def cols(lin: torch.nn.Linear, rows: slice = sl) -> np.ndarray:
        return lin.weight.detach().cpu().float()[rows].T.numpy()  # (d_model, d_k)

    w_o = attn.w_o.weight.detach().cpu().float()  # (d_model out, d_model in)
    return {
        "w_q": cols(attn.w_q),
        "w_k": cols(attn.w_k, sl_kv),
        "w_v": cols(attn.w_v, sl_kv),
        "w_o": w_o[:, sl].T.numpy(),  # (d_k, d_model)
        "w_o_full": w_o.T.numpy(),  # (d_model, d_model)
        "b_o": attn.w_o.bias.detach().cpu().float().numpy() if attn.w_o.bias is not None else None,
        "sink": float(attn.sinks[head].detach()) if attn.sinks is not None else None,  # gpt-oss's learned sink logit
    }


def position_table(model: Transformer, n: int, length: int = 0) -> tuple[str, np.ndarray]:
    """(kind, table) of what the model adds for position: sinusoidal/learned (n, d_model) or RoPE angles
    (n, d_k/2) — a scaled RoPE's real ones, for a text of ``length`` tokens where they depend on it (dynamic NTK,
    LongRoPE); ("none", empty) when it has none. ``n`` is capped at the model's maximum length."""
    cfg = model.cfg
    n = min(n, cfg.max_seq_len)
    if cfg.positional in ("sinusoidal", "learned"):
        return cfg.positional, model.pos_enc.table[:n].detach().cpu().float().numpy()
    if cfg.positional == "rope":
        inv_freq, _ = frequencies(cfg.rope_spec, cfg.rope_dims, cfg.rope_base, length or n)
        return "rope", (torch.arange(n).float()[:, None] * inv_freq[None, :]).numpy()  # (n, pairs), as the model
    return "none", np.zeros((n, 0), dtype=np.float32)
