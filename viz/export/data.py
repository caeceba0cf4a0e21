"""The data behind the figures: labelled matrices as CSV, tokens as CSV, every captured array for an .npz."""

from __future__ import annotations

import csv
import io
from collections.abc import Sequence

import numpy as np


def matrix_csv(matrix: np.ndarray, row_labels: Sequence[str], col_labels: Sequence[str]) -> str:
    """A labelled matrix as CSV: first column the query token, header the key tokens (position-prefixed)."""
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(["query \\ key", *[f"{j}:{t}" for j, t in enumerate(col_labels)]])
    for i, (label, row) in enumerate(zip(row_labels, matrix)):
        writer.writerow([f"{i}:{label}", *[repr(float(v)) if np.isfinite(v) else str(v) for v in row]])
    return out.getvalue()


def read_matrix_csv(text: str) -> tuple[np.ndarray, list[str], list[str]]:
    """Inverse of :func:`matrix_csv` (used by tests and by anyone re-plotting the data)."""
    rows = list(csv.reader(io.StringIO(text)))
    cols = [c.split(":", 1)[1] for c in rows[0][1:]]
    labels = [r[0].split(":", 1)[1] for r in rows[1:]]
    return np.array([[float(v) for v in r[1:]] for r in rows[1:]], dtype=np.float64), labels, cols


def tokens_csv(obs) -> str:
    out = io.StringIO()
    w = csv.writer(out)
    w.writerow(["position", "token", "id", "start", "end", "special"])
    for i, (t, tid, (a, b), sp) in enumerate(zip(obs.tokens, obs.ids, obs.offsets, obs.special)):
        w.writerow([i, t, tid, a, b, bool(sp)])
    return out.getvalue()


def observation_arrays(obs) -> dict[str, np.ndarray]:
    """Every captured array of an observation, for the .npz."""
    arrays = {
        "ids": np.array(obs.ids),
        "special": obs.special,
        "patterns": obs.patterns,
        "hidden": obs.hidden,
    }
    for name in ("scores", "q", "k", "v", "z", "attn_in", "attn_out"):
        value = getattr(obs, name)
        if value is not None:
            arrays[name] = value
    for name, value in obs.metrics.items():
        arrays[f"metric_{name}"] = value
    return arrays


LONG_COLUMNS = ("layer", "head", "query_index", "query_token", "key_index", "key_token", "weight", "score")


def long_csv(obs, heads: Sequence[tuple[int, int]]) -> str:
    """Tidy attention data, one row per (head, query, key): layer, head, query index and token, key index and
    token, weight, score (scaled, −inf where masked; empty when scores were not captured)."""
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(LONG_COLUMNS)
    tokens = list(obs.tokens)
    n = len(tokens)
    q_idx, k_idx = np.divmod(np.arange(n * n), n)
    q_tok, k_tok = [tokens[i] for i in q_idx], [tokens[j] for j in k_idx]
    for layer, head in heads:
        weights = obs.patterns[layer, head].ravel().tolist()
        has_scores = obs.scores is not None or obs.q is not None
        scores = obs.score_matrix(layer, head).ravel().tolist() if has_scores else [""] * (n * n)
        writer.writerows(
            zip([layer] * n * n, [head] * n * n, q_idx.tolist(), q_tok, k_idx.tolist(), k_tok, weights, scores)
        )
    return out.getvalue()


def read_long_csv(text: str) -> list[dict]:
    """Inverse of :func:`long_csv` (tests, and anyone re-plotting the data): rows as dicts with numbers parsed."""
    rows = []
    for row in csv.DictReader(io.StringIO(text)):
        for key in ("layer", "head", "query_index", "key_index"):
            row[key] = int(row[key])
        row["weight"] = float(row["weight"])
        row["score"] = float(row["score"]) if row["score"] else None
        rows.append(row)
    return rows
