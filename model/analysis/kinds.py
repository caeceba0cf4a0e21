"""What job each head does on a text: previous/next token, self, a sink, punctuation, the other pieces of a word,
the earlier copy of a repeated token — or none (broad, or mixed). Pure numpy.

Every score is a number another page shows: previous/next/self are Head metrics' (one definition,
:data:`model.analysis.metrics.METRIC_HELP`), sinks and punctuation the sink shares of "Sinks and head types",
"same word" and "repeated token" Find heads' relation scores. A head gets the kind whose score passes its
threshold by the largest factor; "broad" (nearly uniform rows) and "mixed" are no specialisation.
Shapes: L layers, H heads, N tokens.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from model.analysis.find import find_heads, relation_pairs, token_pairs, word_ids
from model.analysis.metrics import head_metrics, normalised_entropy
from model.analysis.sinks import BROAD_ENTROPY, TYPE_THRESHOLD, sink_shares

KINDS = (
    "previous token",
    "next token",
    "self",
    "sink",
    "punctuation",
    "same word",
    "repeated token",
    "your pair",  # the focus query → key (a pronoun and its antecedent, say), as Find heads scores it
    "broad",
)
SPECIALISED = KINDS[:-1]  # broad is the absence of a job
NOT_COMPUTABLE = "not computable"  # a head whose weights are NaN or Inf (a checkpoint with NaN/Inf weights)
#: the score a head needs for a kind: half of each query's weight (as for sinks), or for broad rows 80 % of the
#: largest possible entropy
THRESHOLDS = {k: TYPE_THRESHOLD for k in SPECIALISED} | {"broad": BROAD_ENTROPY}
#: one key among many: a fifth of the query's weight (and three times chance, and not a column pattern) is a link
THRESHOLDS["your pair"] = PAIR_THRESHOLD = 0.2
SENTENCES = {
    "previous token": "{s:.2f} of each token's weight goes to the token before it",
    "next token": "{s:.2f} of each token's weight goes to the token after it",
    "self": "{s:.2f} of each token's weight stays on itself",
    "sink": "{s:.2f} of each token's weight is parked on {target}",
    "punctuation": "{s:.2f} of each token's weight goes to punctuation",
    "same word": "a word piece puts {s:.2f} of its weight on the other pieces of its word",
    "repeated token": "a repeated token puts {s:.2f} of its weight on its other occurrences",
    "your pair": "{pair} with {s:.2f} of the query's weight",
    "broad": "its rows are nearly uniform ({s:.0%} of the largest possible entropy)",
}


@dataclass(frozen=True)
class HeadKinds:
    scores: dict[str, np.ndarray]  # kind -> (L, H), in the kind's own measure (absent: the text has no such pairs)
    kind: np.ndarray  # (L, H) object: each head's kind, "" for mixed
    sink_target: np.ndarray  # (L, H) object: the sink each head parks most weight on
    pair: str = ""  # the focus pair, “it” → “animal” (empty: none)

    def heads(self, kind: str) -> list[tuple[int, int]]:
        """The heads of ``kind``, strongest first (none when the text has no pairs for it)."""
        if kind not in self.scores:
            return []
        layer, head = np.nonzero(self.kind == kind)
        order = np.argsort(-self.scores[kind][layer, head], kind="stable")
        return [(int(layer[i]), int(head[i])) for i in order]

    def counts(self) -> dict[str, int]:
        """Heads of each kind, "mixed" (no kind) and "not computable" (NaN or Inf weights)."""
        counts = {k: int((self.kind == k).sum()) for k in KINDS} | {"mixed": int((self.kind == "").sum())}
        return counts | {NOT_COMPUTABLE: int((self.kind == NOT_COMPUTABLE).sum())}

    @property
    def specialised(self) -> int:
        """Heads with a job (any kind but broad and mixed)."""
        return int(np.isin(self.kind, SPECIALISED).sum())

    def sentence(self, kind: str, layer: int, head: int) -> str:
        s = float(self.scores[kind][layer, head])
        return SENTENCES[kind].format(s=s, target=self.sink_target[layer, head], pair=f"links {self.pair}")


def relation_score(patterns: np.ndarray, pairs: np.ndarray) -> np.ndarray:
    """(L, H): Find heads' score of a sparse relation (the mean over its queries of the weight on their keys),
    gathered cell by cell instead of through a full (L, H, Q, N) product."""
    qi, ki = np.nonzero(pairs)
    n_queries = len(np.unique(qi))
    return np.asarray(patterns)[:, :, qi, ki].sum(-1, dtype=np.float64) / max(n_queries, 1)


def head_kinds(
    patterns: np.ndarray,
    tokens: list[str],
    special,
    words=None,
    causal: bool = False,
    pair=None,
    metrics=None,
    rows=None,
) -> HeadKinds:
    """Sort every head of patterns (L, H, N, N) into a kind for this text; ``words``: each token's word id
    (model.analysis.find.word_ids), needed for "same word"; ``pair``: (query, key) positions of a link to look
    for (a pronoun and its antecedent), scored as Find heads scores picked tokens — a head that gives the key as
    much from every other token (a column pattern) does not count. ``metrics``: head_metrics of these patterns
    when already computed (an Observation keeps them), ``rows`` their per-row statistics."""
    p = np.asarray(patterns, dtype=np.float32)
    special = np.asarray(special, dtype=bool)
    if metrics is None:
        rows = {}
        metrics = head_metrics(p, special=special, rows_out=rows)
    scores = {"previous token": metrics["previous"], "next token": metrics["next"], "self": metrics["self"]}
    shares = sink_shares(p, tokens, special, causal)
    targets = ["[CLS]", "[SEP]"] + (["position 0"] if causal else [])
    stack = np.stack([shares[t] for t in targets])  # (T, L, H)
    scores["sink"] = stack.max(0)
    sink_target = np.array(targets, dtype=object)[stack.argmax(0)]
    if shares["punctuation"].any():
        scores["punctuation"] = shares["punctuation"]
    for kind, relation in (("same word", "same word"), ("repeated token", "same token")):
        if relation == "same word" and words is None:
            continue
        pairs = relation_pairs(relation, tokens, special, words)
        if pairs.any():
            scores[kind] = relation_score(p, pairs).astype(np.float32)
    label = ""
    n = p.shape[-1]
    if pair is not None and all(0 <= i < n for i in pair) and pair[0] != pair[1]:
        scores["your pair"] = linked(find_heads(p, token_pairs(n, [pair[0]], [pair[1]]), special))
        label = pair_label(tokens, pair)
    scores["broad"] = normalised_entropy(p, rows).astype(np.float32)
    return classify(scores, sink_target, label, np.isfinite(metrics["entropy"]))


def linked(found) -> np.ndarray:
    """(L, H) a pair's score where it is a link: 3 × chance and not a column pattern; 0 elsewhere."""
    chance = np.asarray(found.chance)[:, None]  # (L, 1): each layer's own
    return np.where(found.flagged | (found.score < 3 * chance), 0.0, found.score).astype(np.float32)


def pair_label(tokens: list[str], pair: tuple[int, int]) -> str:
    """“it” → “animal”, each token with its position where the text has another like it (“the”·5), as axes label."""
    words = [t.strip() or t for t in tokens]
    return " → ".join(f"“{words[i]}”" + (f"·{i}" if words.count(words[i]) > 1 else "") for i in pair)


def long_kinds(long, pair=None) -> HeadKinds:
    """:func:`head_kinds` of a text read whole (a model.long.LongObservation), from its streamed statistics and,
    for a focus pair, its exact weights."""
    ok = pair is not None and all(0 <= i < long.n_tokens for i in pair) and pair[0] != pair[1]
    link = linked(long.pair(*pair)) if ok else None
    return streamed_kinds(long.stats(), long.causal, link, pair_label(long.tokens, pair) if ok else "")


def classify(scores: dict[str, np.ndarray], sink_target: np.ndarray, pair: str, computable: np.ndarray) -> HeadKinds:
    """Each head's kind from its scores {kind: (L, H)}: the kind passing its threshold by the largest factor,
    else broad or mixed; ``computable`` (L, H) False: NaN/Inf weights, where no score means anything."""
    L, H = computable.shape
    strength = np.stack([scores[k] / THRESHOLDS[k] if k in scores else np.zeros((L, H)) for k in SPECIALISED])
    kind = np.full((L, H), "", dtype=object)
    kind[scores["broad"] >= THRESHOLDS["broad"]] = "broad"
    best = strength.argmax(0)
    strong = strength.max(0) >= 1.0
    kind[strong] = np.array(SPECIALISED, dtype=object)[best[strong]]
    kind[~computable] = NOT_COMPUTABLE
    return HeadKinds(scores, kind, sink_target, pair)


def streamed_kinds(stats: dict[str, np.ndarray], causal: bool, link=None, pair: str = "") -> HeadKinds:
    """:func:`head_kinds` from a long text's streamed statistics (model/long.py: the same scores, each summed
    row block by row block); ``link``: (L, H) the focus pair's score as Find heads gives it (0 where flagged)."""
    scores = {"previous token": stats["previous"], "next token": stats["next"], "self": stats["self"]}
    targets = ["[CLS]", "[SEP]"] + (["position 0"] if causal else [])
    stack = np.stack([stats[t] for t in targets])  # (T, L, H)
    scores["sink"] = stack.max(0)
    sink_target = np.array(targets, dtype=object)[stack.argmax(0)]
    for kind, name in (("punctuation", "punctuation"), ("same word", "same word"), ("repeated token", "same token")):
        if np.isfinite(stats[name]).all() and (kind != "punctuation" or stats[name].any()):
            scores[kind] = stats[name].astype(np.float32)
    if link is not None:
        scores["your pair"] = np.asarray(link, dtype=np.float32)
    scores["broad"] = stats["broad"].astype(np.float32)
    return classify(scores, sink_target, pair, np.isfinite(stats["entropy"]))


def observed_kinds(obs, pair=None) -> HeadKinds:
    """:func:`head_kinds` of an observation (:class:`model.observe.Observation`): its patterns, tokens, word ids."""
    words = word_ids(obs.text, obs.offsets, obs.special)
    return head_kinds(obs.patterns, obs.tokens, obs.special, words, obs.causal, pair, obs.metrics, obs.row_stats)
