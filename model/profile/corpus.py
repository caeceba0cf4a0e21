"""A corpus is a list of documents: from a .txt file (paragraphs separated by blank lines, else lines), a .jsonl
file (one JSON object per line with a "text" field and an optional "id", or a bare JSON string), or the bundled
held-out documents.
Nothing in a corpus file is executed; files larger than MAX_CORPUS_BYTES are refused."""

from __future__ import annotations

import gzip
import hashlib
import json
import re
from pathlib import Path

MAX_CORPUS_BYTES = 10 * 1024 * 1024
BUNDLED = Path(__file__).resolve().parents[2] / "assets" / "corpus" / "held_out.json.gz"


class CorpusError(ValueError):
    """A corpus file that cannot be read (the message says what is wrong and what is accepted)."""


def parse_corpus(data: bytes, name: str) -> list[str]:
    """Documents from a corpus file's bytes; ``name`` decides the format by its suffix (.txt or .jsonl)."""
    return parse_documents(data, name)[0]


def parse_documents(data: bytes, name: str) -> tuple[list[str], list[str] | None]:
    """(documents, their ids) from a corpus file's bytes: a .jsonl line's "id" field names its document (as text;
    "" where a line has none); ids is None when no line has one (and for .txt files)."""
    if len(data) > MAX_CORPUS_BYTES:
        raise CorpusError(f"{name} is {len(data) / 2**20:.1f} MB; corpora up to {MAX_CORPUS_BYTES // 2**20} MB")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise CorpusError(f"{name} is not UTF-8 text (byte {exc.start}); save it as UTF-8 .txt or .jsonl") from None
    suffix = Path(name).suffix.lower()
    ids: list[str] = []
    if suffix == ".jsonl":
        docs = []
        for number, line in enumerate(text.splitlines(), start=1):
            if not line.strip():
                continue
            try:
                item = json.loads(line)
            except json.JSONDecodeError as exc:
                raise CorpusError(f"{name}, line {number}: not JSON ({exc.msg})") from None
            value = item.get("text") if isinstance(item, dict) else item
            if not isinstance(value, str):
                raise CorpusError(f'{name}, line {number}: expected {{"text": "..."}} or a JSON string')
            docs.append(value)
            given = item.get("id") if isinstance(item, dict) else None
            ids.append("" if given is None else str(given))
    elif suffix == ".txt":
        parts = re.split(r"\n\s*\n", text) if re.search(r"\n\s*\n", text) else text.splitlines()
        docs = parts
    else:
        raise CorpusError(f"{name}: corpora are .txt (paragraphs or lines) or .jsonl (one {{'text': ...}} per line)")
    ids = ids or [""] * len(docs)
    kept = [(" ".join(d.split()), i) for d, i in zip(docs, ids, strict=True)]
    kept = [(d, i) for d, i in kept if d]
    if not kept:
        raise CorpusError(f"{name} holds no text")
    texts, names = [d for d, _ in kept], [i for _, i in kept]
    return texts, names if any(names) else None


def read_corpus(path: str | Path) -> list[str]:
    """Documents of a corpus file on disk (.txt or .jsonl, up to MAX_CORPUS_BYTES)."""
    return read_documents(path)[0]


def read_documents(path: str | Path) -> tuple[list[str], list[str] | None]:
    """(documents, ids) of a corpus file on disk, as :func:`parse_documents`."""
    path = Path(path)
    if not path.is_file():
        raise CorpusError(f"{path} is not a file")
    if path.stat().st_size > MAX_CORPUS_BYTES:
        raise CorpusError(f"{path} is larger than {MAX_CORPUS_BYTES // 2**20} MB")
    return parse_documents(path.read_bytes(), path.name)


def bundled_documents() -> list[str]:
    """The held-out documents of the bundled model's training corpus (sources and licences: assets/corpus/)."""
    return [d["text"] for d in json.loads(gzip.decompress(BUNDLED.read_bytes()))]


def corpus_hash(docs: list[str], max_len: int, ids: list[str] | None = None) -> str:
    """A short stable key for (documents, token limit, their ids if any): the first 16 hex digits of a SHA-256."""
    h = hashlib.sha256(f"{max_len}\0".encode())
    for doc in docs:
        h.update(doc.encode("utf-8", "replace") + b"\0")
    for name in ids or ():
        h.update(b"\1" + name.encode("utf-8", "replace"))
    return h.hexdigest()[:16]
