"""Where heads park their weight, and what kind of head each is (numpy only).

Clark et al. (2019, "What Does BERT Look At?") report BERT's weight on [CLS], on [SEP] and on punctuation
separately; decoders park it on position 0 (Xiao et al., 2023, "attention sinks"). :func:`sink_shares` gives
each of the four per head, :func:`head_types` a one-word label per head from the same numbers.

Shapes: L layers, H heads, N tokens; patterns (L, H, N, N), rows summing to 1.
"""

from __future__ import annotations

import unicodedata

import numpy as np

from model.analysis.decoder import SINK_THRESHOLD
from model.analysis.flow import row_shares
from model.analysis.metrics import diagonal_mass, head_metrics, normalised_entropy
from model.analysis.rows import OFFSETS, offset_name

SINK_TARGETS = ("[CLS]", "[SEP]", "punctuation", "position 0")
#: a head gets a positional/target label when its queries put at least this share on it (the sink threshold)
TYPE_THRESHOLD = SINK_THRESHOLD
#: "broad": mean row entropy at least this fraction of the uniform row's log N
BROAD_ENTROPY = 0.8
HEAD_TYPES = (
    "previous", "next", "self", "[CLS]", "[SEP]", "punctuation", "position 0", "positional", "broad", "mixed",
    "not computable",  # NaN or Inf weights
)  # fmt: skip


def is_punctuation(token: str) -> bool:
    """A token made only of punctuation ("," "." "##." " ?" "'s" is not), ignoring WordPiece's ## and spaces."""
    core = token.removeprefix("##").strip().replace("Ġ", "")
    return bool(core) and all(unicodedata.category(c).startswith("P") for c in core)


def target_columns(tokens: list[str], special: np.ndarray) -> dict[str, np.ndarray]:
    """(N,) bool key columns of each sink target. [CLS]/[SEP] match those labels (and BERT-style <s>, </s>)."""
    special = np.asarray(special, dtype=bool)
    n = len(tokens)
    first = np.zeros(n, dtype=bool)
    first[:1] = True
    return {
        "[CLS]": np.array([t in ("[CLS]", "<s>") for t in tokens], dtype=bool),
        "[SEP]": np.array([t in ("[SEP]", "</s>") for t in tokens], dtype=bool),
        "punctuation": np.array([is_punctuation(t) for t in tokens], dtype=bool) & ~special,
        "position 0": first,
    }


def present_targets(tokens: list[str], special: np.ndarray) -> list[str]:
    """The sink targets this text has a token for, in SINK_TARGETS' order (position 0 always; a decoder's text has
    no [CLS] or [SEP])."""
    cols = target_columns(tokens, special)
    return [t for t in SINK_TARGETS if cols[t].any()]


def first_target(tokens: list[str], special: np.ndarray, causal: bool) -> str:
    """The sink target a page opens on: position 0 in a causal model (where its sink is), else the first the text
    has ([CLS] for an encoder)."""
    return "position 0" if causal else present_targets(tokens, special)[0]


def sink_shares(patterns: np.ndarray, tokens: list[str], special: np.ndarray, causal: bool = False) -> dict:
    """Mean share of each query's weight on each sink target, per head: {target: (L, H)}.

    Averaged over the queries that can see the target, the target's own tokens aside: a sliding window hides
    position 0 from every later query, and a query that cannot see a sink cannot use it (on Gemma 3's local layers
    a long text's far queries diluted every share); a causal model's first query sees only position 0. So a head's
    share on position 0 is :func:`model.analysis.decoder.sink_mass`, the sink lesson's number. What a layer lets a
    query see is where its heads' weights are positive (softmax never gives a seen key 0). ``causal`` is implied
    by the patterns (kept for callers)."""
    p = np.asarray(patterns, dtype=np.float32)
    seen = np.stack([(layer > 0).any(0) for layer in p])  # (L, N, N): what each query may see
    out = {}
    for name, c in target_columns(tokens, special).items():
        can = seen[..., c].any(-1) & ~c  # (L, N): the queries that can see the target, not the target itself
        can = np.where(can.any(-1, keepdims=True), can, True)  # none can (the text has none): every query, share 0
        share = p[..., c].sum(-1)  # (L, H, N)
        out[name] = ((share * can[:, None]).sum(-1) / can.sum(-1)[:, None]).astype(np.float32)
    return out


def sink_keys(tokens: list[str], special: np.ndarray, causal: bool) -> np.ndarray:
    """(N,) bool: the keys "renormalise without the sink" removes — [CLS], [SEP] and other special tokens, and
    position 0 in a causal model (where the sink is the first token, special or not)."""
    keys = np.asarray(special, dtype=bool).copy()
    if causal and len(keys):
        keys[0] = True
    return keys


def without_keys(pattern: np.ndarray, keys: np.ndarray) -> np.ndarray:
    """A pattern (..., N, M) with the ``keys`` columns ((M,) bool) set to 0 and each row rescaled to sum to 1
    again; a row whose only weight was on those keys stays 0."""
    p = np.array(pattern, dtype=np.float32)
    p[..., np.asarray(keys, dtype=bool)] = 0.0
    return row_shares(p)


def sink_heads(shares: dict[str, np.ndarray], threshold: float = SINK_THRESHOLD) -> np.ndarray:
    """(L, H) bool: heads whose queries put at least ``threshold`` of their weight on one sink target."""
    return np.max(np.stack([shares[t] for t in SINK_TARGETS]), axis=0) >= threshold


def head_types(patterns: np.ndarray, tokens: list[str], special: np.ndarray, causal: bool = False) -> np.ndarray:
    """One label per head (L, H) of strings, from the mean weight on each candidate:

    previous/next/self token, [CLS], [SEP], punctuation, position 0 — the largest, if it reaches TYPE_THRESHOLD
    (ties go to the earlier name); else "positional" if one other fixed offset (±2 … ±8) reaches it; else
    "broad" if rows are nearly uniform (each row's entropy at least BROAD_ENTROPY of the log of the keys it sees, on
    average: a causal row sees fewer); else "mixed"; "not computable"
    for a head whose weights are NaN or Inf."""
    p = np.asarray(patterns, dtype=np.float32)
    metrics = head_metrics(p, special=special)  # previous/next/self as Head metrics define them
    candidates = {name: metrics[name] for name in ("previous", "next", "self")}
    candidates.update(sink_shares(p, tokens, special, causal))
    other = np.max([diagonal_mass(p, k).mean(-1) for k in OFFSETS], axis=0)  # (L, H)
    # over the keys each row may see, as the head gallery's "broad"
    return _labels(candidates, other, normalised_entropy(p), causal)


def streamed_types(stats: dict[str, np.ndarray], causal: bool) -> np.ndarray:
    """:func:`head_types` of a text read whole, from its streamed row statistics {name: (L, H)}
    (model.long.LongObservation.stats: the same means, summed row block by row block)."""
    candidates = {name: stats[name] for name in ("previous", "next", "self", *SINK_TARGETS)}
    other = np.max([stats[offset_name(k)] for k in OFFSETS], axis=0)  # (L, H)
    return _labels(candidates, other, stats["broad"], causal)


def _labels(candidates: dict[str, np.ndarray], other: np.ndarray, ent: np.ndarray, causal: bool) -> np.ndarray:
    """(L, H) labels from each candidate's mean weight {name: (L, H)}, in HEAD_TYPES' order, the largest other
    offset's and the normalised entropy (:func:`head_types`)."""
    if not causal:
        candidates = {k: v for k, v in candidates.items() if k != "position 0"}  # an encoder's is [CLS]: one label
    names = list(candidates)
    stack = np.stack([candidates[k] for k in names])  # (C, L, H)
    labels = np.full(stack.shape[1:], "mixed", dtype=object)
    labels[ent >= BROAD_ENTROPY] = "broad"
    labels[other >= TYPE_THRESHOLD] = "positional"
    best = stack.argmax(0)
    strong = stack.max(0) >= TYPE_THRESHOLD
    labels[strong] = np.array(names, dtype=object)[best[strong]]
    labels[~np.isfinite(ent)] = "not computable"
    return labels
