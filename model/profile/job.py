"""The corpus job: every document (cut to ``max_len`` tokens) through the model in padded batches, and for each
document and head the metrics of :mod:`model.analysis.metrics` and the sink shares of :mod:`model.analysis.sinks`,
computed on that document's own tokens (padding never enters a metric). One row per (document, layer, head).

Captures on a shared model run side by side (:mod:`model.capture`), so other users' requests are served while a
corpus runs; ``progress(done, total)`` is called after every batch and ``cancel()`` is checked before each one.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from model.analysis.lens import pad_batch
from model.analysis.metrics import METRICS, head_metrics
from model.analysis.sinks import SINK_TARGETS, sink_shares
from model.capture import run_with_cache
from model.io.tokenizer import Encoded, Tokenizer
from model.transformer import Transformer

if TYPE_CHECKING:  # pandas (0.5 s to import) is loaded when a profile is made or read
    import pandas as pd

#: parquet column of each sink share
SHARE_COLUMNS = {"[CLS]": "share_cls", "[SEP]": "share_sep", "punctuation": "share_punct", "position 0": "share_pos0"}
COLUMNS = (*METRICS, *SHARE_COLUMNS.values())
# chosen by measurement (bench/corpus.py): 1,000 MiniLM documents in 20.9 s at 8, 21.7 s at 32, 25.4 s at 1;
# small batches also give way to other users' requests sooner (each batch is one stretch of work for the GIL)
BATCH_SIZE = 8
MAX_LEN = 128


class CancelledError(RuntimeError):
    """The corpus run was cancelled; nothing was written."""


@dataclass(frozen=True)
class Batch:
    docs: list[int]  # document indices
    encoded: list[Encoded]


def batches(encoded: list[Encoded], size: int) -> list[Batch]:
    """Documents grouped by similar length (little padding), in a fixed order."""
    order = sorted(range(len(encoded)), key=lambda i: (len(encoded[i]), i))
    return [Batch(order[i : i + size], [encoded[j] for j in order[i : i + size]]) for i in range(0, len(order), size)]


def document_rows(doc: int, patterns: np.ndarray, enc: Encoded, causal: bool) -> dict[str, np.ndarray]:
    """The metric columns of one document: patterns (L, H, n, n) of its own tokens -> {column: (L·H,)}."""
    special = np.asarray(enc.special, dtype=bool)
    metrics = head_metrics(patterns, special=special)
    shares = sink_shares(patterns, list(enc.tokens), special, causal)
    L, H = patterns.shape[:2]
    cols = {"doc": np.full(L * H, doc), "layer": np.repeat(np.arange(L), H), "head": np.tile(np.arange(H), L)}
    cols.update({m: metrics[m].ravel() for m in METRICS})
    cols.update({SHARE_COLUMNS[t]: shares[t].ravel() for t in SINK_TARGETS})
    return cols


def run_batch(model: Transformer, batch: Batch, pad_id: int, device: str = "cpu") -> list[dict[str, np.ndarray]]:
    """One padded forward pass; the rows of each of its documents."""
    ids, mask, _ = pad_batch([enc.ids for enc in batch.encoded], pad_id)  # (B, n), padded on the right
    _, trace = run_with_cache(model, ids.to(device), mask.to(device), kinds=["pattern"])
    patterns = trace.stack("pattern").float().numpy()  # (L, B, H, n, n)
    return [
        document_rows(doc, patterns[:, row, :, : len(enc), : len(enc)], enc, model.cfg.causal)
        for row, (doc, enc) in enumerate(zip(batch.docs, batch.encoded))
    ]


def profile_corpus(
    model: Transformer,
    tokenizer: Tokenizer,
    docs: list[str],
    *,
    max_len: int = MAX_LEN,
    batch_size: int = BATCH_SIZE,
    device: str = "cpu",
    progress: Callable[[int, int], None] | None = None,
    cancel: Callable[[], bool] | None = None,
) -> pd.DataFrame:
    """Per (document, layer, head) metrics of a corpus: a DataFrame with columns doc, layer, head, *COLUMNS,
    sorted by (doc, layer, head). Raises CancelledError when ``cancel()`` turns true."""
    limit = min(max_len, model.cfg.max_seq_len)
    encoded = [tokenizer.encode(doc, max_len=limit) for doc in docs]
    parts: list[dict[str, np.ndarray]] = []
    plan = batches(encoded, batch_size)
    done = 0
    for batch in plan:
        if cancel is not None and cancel():
            raise CancelledError(f"cancelled after {done} of {len(docs)} documents")
        parts.extend(run_batch(model, batch, tokenizer.pad_id, device))
        done += len(batch.docs)
        if progress is not None:
            progress(done, len(docs))
    return table(parts)


def table(parts: list[dict[str, np.ndarray]]) -> pd.DataFrame:
    """Rows of many documents as one DataFrame sorted by (doc, layer, head), float32 metrics."""
    import pandas as pd

    frame = pd.DataFrame({k: np.concatenate([p[k] for p in parts]) for k in parts[0]})
    frame = frame.astype({c: "float32" for c in COLUMNS} | {"doc": "int32", "layer": "int16", "head": "int16"})
    return frame.sort_values(["doc", "layer", "head"], kind="stable").reset_index(drop=True)


def head_means(frame: pd.DataFrame) -> pd.DataFrame:
    """Per-head means over the documents: one row per (layer, head)."""
    return frame.groupby(["layer", "head"], sort=True)[list(COLUMNS)].mean().reset_index()


def top_documents(frame: pd.DataFrame, layer: int, head: int, metric: str, k: int = 4) -> pd.DataFrame:
    """The ``k`` documents where one head scores highest on ``metric`` (doc and value)."""
    rows = frame[(frame["layer"] == layer) & (frame["head"] == head)]
    return rows.nlargest(k, metric, keep="first")[["doc", metric]]
