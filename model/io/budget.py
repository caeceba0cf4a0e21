"""Byte budgets before parsing: every JSON or text file a user can hand the lab (a model folder's config.json and
tokenizer files, a .zip's members, a session file, a deck link) is measured before it is read and refused in plain
words when it is larger than any real one, or nested or numerous beyond reason — before the parser spends the
server's memory on it. Sized to real files (docs/security.md says which).

No torch here: the dashboard's session and link readers use it too."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

MB = 1024 * 1024
#: the largest file of each kind we read, and the real ones it is sized to
LIMITS = {
    "config.json": 1 * MB,  # Hugging Face configs: 1–30 KB (Gemma 3's multimodal one: 6 KB)
    "tokenizer.json": 64 * MB,  # Gemma 3's: 33 MB; Llama 3's: 9 MB; Qwen 2.5's: 7 MB
    "vocab": 64 * MB,  # vocab.txt, vocab.json, merges.txt, tokenizer.model, tokenizer_config.json (≤ 20 MB)
    "json": 16 * MB,  # other JSON in a model folder: the shard index (≤ 100 KB), generation_config, …
    "session": 64 * MB,  # a session file: settings and a deck of ≤ 60 figures (a 60-slide deck of maps: ≈ 30 MB)
}
#: arrays and objects a JSON file of each kind may hold (counted on its bytes before parsing): a session file's
#: 60 figures hold ≈ 40,000; a tokenizer.json's merges list one per merge (Gemma 3: 514,906)
CONTAINERS = {"session": 1_000_000, "json": 1_000_000, "config.json": 100_000}
#: a .zip member that unpacks to this much at more than MAX_RATIO times its packed size is a bomb: weights compress
#: by at most ≈ 1.5 ×, text by ≈ 10 ×
BOMB_BYTES = 16 * MB
MAX_RATIO = 100


def limit_for(name: str) -> int | None:
    """The byte budget of a file called ``name`` (None: weights, bounded only by the upload's own limits)."""
    if name in LIMITS:
        return LIMITS[name]
    if name in ("vocab.txt", "vocab.json", "merges.txt", "tokenizer.model", "tokenizer_config.json", "spiece.model"):
        return LIMITS["vocab"]
    if name.endswith(".json"):
        return LIMITS["json"]
    return None


def too_large(what: str, size: int, limit: int) -> str:
    """The one line a refusal says: what, how large, and the budget (never a server path)."""
    return f"{what} is {_mb(size)}, more than the {_mb(limit)} any real one needs; it is not read"


def parse_json(data: str | bytes, what: str, kind: str = "json") -> Any:
    """``data`` parsed as JSON after its budget is checked: its size, its number of arrays and objects, and its
    nesting (the parser's own recursion limit, answered as a ValueError). Raises ValueError in plain words."""
    limit = LIMITS.get(kind, LIMITS["json"])
    if len(data) > limit:
        raise ValueError(too_large(what, len(data), limit))
    raw = data.encode("utf-8", errors="replace") if isinstance(data, str) else data
    containers = raw.count(b"[") + raw.count(b"{")  # an upper bound: brackets inside strings count too
    most = CONTAINERS.get(kind, CONTAINERS["json"])
    if containers > most:
        raise ValueError(f"{what} holds {containers:,} arrays and objects; a real one holds fewer than {most:,}")
    try:
        return json.loads(raw)
    except RecursionError:
        raise ValueError(f"{what} is nested deeper than any real one; it is not read") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"{what} is not valid JSON: {exc}") from None


def read_budgeted(path: Path, what: str | None = None, kind: str | None = None) -> bytes:
    """A file's bytes, its size checked before it is read against the budget of ``kind`` (a key of LIMITS), else
    of its name."""
    what = what or path.name
    limit = LIMITS[kind] if kind else limit_for(path.name)
    size = path.stat().st_size
    if limit is not None and size > limit:
        raise ValueError(too_large(what, size, limit))
    return path.read_bytes()


def _mb(size: int) -> str:
    return f"{size / MB:,.0f} MB" if size >= MB else f"{size / 1024:,.0f} KB"


def load_json_file(path: Path, kind: str | None = None) -> Any:
    """A JSON file of a model folder, its size checked before it is read and its contents before they are
    parsed (ValueError in plain words, naming the file only)."""
    return parse_json(read_budgeted(path), path.name, kind or (path.name if path.name in LIMITS else "json"))
