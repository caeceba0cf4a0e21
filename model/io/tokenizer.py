"""Tokenisation with the `tokenizers` library (never `transformers`).

Wraps a ``tokenizers.Tokenizer`` with no fixed padding or truncation, and returns ids, token strings,
character offsets into the original text and which tokens are special.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from tokenizers import Tokenizer as _HFTokenizer
from tokenizers import decoders, models, pre_tokenizers

from model.errors import CheckpointError
from model.io.budget import read_budgeted

BUNDLED_TOKENIZER = Path(__file__).resolve().parents[2] / "assets" / "tokenizer.json"  # BERT uncased (bundled)
MAX_TEXT_CHARS = 200_000  # longer text is cut before tokenising (a 512-token model sees ~2k chars)


@dataclass(frozen=True)
class Encoded:
    """One encoded text. ``offsets[i]`` is the (start, end) character span of token i (0, 0 for specials)."""

    ids: tuple[int, ...]
    tokens: tuple[str, ...]
    offsets: tuple[tuple[int, int], ...]
    special: tuple[bool, ...]
    truncated: bool  # the text had more tokens than the model accepts
    n_tokens_full: int  # tokens before truncation (specials included)
    text: str  # the text the offsets index into

    def __len__(self) -> int:
        return len(self.ids)


class Tokenizer:
    """A thread-safe view of a ``tokenizers.Tokenizer`` (it is never reconfigured after loading)."""

    def __init__(self, inner: _HFTokenizer) -> None:
        inner.no_padding()
        inner.no_truncation()
        self.inner = inner
        # byte-level BPE (GPT-2, LLaMA-3, SmolLM) stores bytes as printable stand-ins ("Ġ" for a space);
        # labels show the text instead
        self.byte_level = isinstance(inner.decoder, decoders.ByteLevel)
        # SentencePiece (LLaMA's tokenizer.model, Gemma, T5) writes a space as "▁" and a byte it has no piece for as
        # "<0x0A>"; labels show the text, as for byte-level BPE
        state = inner.decoder.__getstate__() if inner.decoder is not None else b""
        self.metaspace = not self.byte_level and "▁".encode() in state
        self._special = {t.content for t in inner.get_added_tokens_decoder().values() if t.special}

    def label(self, token: str) -> str:
        """What a token looks like to a reader: byte-level stand-ins and SentencePiece's "▁" decoded (" cat", "↵"),
        others unchanged."""
        raw = self._raw(token)
        if raw is None:  # a special token matched with the space it strips (RoBERTa's " <mask>") shows as itself
            return token.strip() if token.strip() in self._special else token
        # a piece of a multi-byte character (an emoji split in three) shows its bytes: "\xf0\x9f"
        text = raw.decode("utf-8", errors="backslashreplace").replace("\n", "↵").replace("\t", "⇥")
        return text if text.strip() else text.replace(" ", "␣")

    def labels(self, tokens) -> tuple[str, ...]:
        """Labels of a sequence: as :meth:`label`, except that the pieces of one character split across tokens
        (an emoji in three byte-level tokens) show the character on the first piece and "↳" + it on the others."""
        out: list[str] = []
        i = 0
        while i < len(tokens):
            raw, j = self._raw(tokens[i]), i + 1
            while raw is not None and _incomplete(raw) and j < len(tokens) and j - i < 4:
                more = self._raw(tokens[j])
                if more is None:
                    break
                raw, j = raw + more, j + 1
            if raw is None or j == i + 1 or _incomplete(raw):  # whole on its own, or it cannot be completed
                out.append(self.label(tokens[i]))
                i += 1
                continue
            text = self._shown(raw.decode("utf-8"))
            out += [text, *(["↳" + (text.strip() or text)] * (j - i - 1))]
            i = j
        return tuple(out)

    def _raw(self, token: str) -> bytes | None:
        """A byte-level or SentencePiece token's bytes (None for special tokens and other tokenizers)."""
        if token in self._special or token.strip() in self._special or not (self.byte_level or self.metaspace):
            return None
        if self.byte_level:
            return bytes(_BYTE_OF.get(ch, 63) for ch in token)  # 63 = "?" for a character outside the byte map
        if len(token) == 6 and token.startswith("<0x") and token.endswith(">"):  # SentencePiece's byte fallback
            try:
                return bytes([int(token[3:5], 16)])
            except ValueError:
                return token.encode("utf-8")
        return token.replace("▁", " ").encode("utf-8")

    @staticmethod
    def _shown(text: str) -> str:
        text = text.replace("\n", "↵").replace("\t", "⇥")
        return text if text.strip() else text.replace(" ", "␣")

    @classmethod
    def from_str(cls, data: str) -> Tokenizer:
        try:
            return cls(_HFTokenizer.from_str(data))
        except Exception as exc:  # the Rust side raises plain Exception subclasses
            raise CheckpointError(f"not a valid tokenizer.json: {exc}") from None

    @classmethod
    def from_file(cls, path: str | Path) -> Tokenizer:
        path = Path(path)
        if not path.is_file():
            raise CheckpointError(f"tokenizer file not found: {path.name}")
        try:
            data = read_budgeted(path, path.name, kind="tokenizer.json")
        except ValueError as exc:
            raise CheckpointError(str(exc)) from None
        return cls.from_str(data.decode("utf-8", errors="replace"))

    def to_str(self) -> str:
        return self.inner.to_str()

    @property
    def vocab_size(self) -> int:
        return self.inner.get_vocab_size(with_added_tokens=True)

    def token_id(self, token: str) -> int | None:
        return self.inner.token_to_id(token)

    @property
    def mask_token(self) -> str | None:
        for cand in ("[MASK]", "<mask>"):
            if self.inner.token_to_id(cand) is not None:
                return cand
        return None

    @property
    def unk_token(self) -> str | None:
        """The token that stands for text outside the vocabulary ([UNK], <unk>), or None when there is none."""
        unk = getattr(self.inner.model, "unk_token", None)
        if unk and self.inner.token_to_id(unk) is not None:
            return unk
        for cand in ("[UNK]", "<unk>"):
            if self.inner.token_to_id(cand) is not None:
                return cand
        return None

    @property
    def pad_id(self) -> int:
        for cand in ("[PAD]", "<pad>"):
            tid = self.inner.token_to_id(cand)
            if tid is not None:
                return tid
        return 0

    def id_to_token(self, i: int) -> str:
        """The readable label of token id ``i``."""
        token = self.inner.id_to_token(i)
        return f"<{i}>" if token is None else self.label(token)

    def special_ids(self) -> set[int]:
        data = json.loads(self.inner.to_str())
        return {t["id"] for t in data.get("added_tokens", []) if t.get("special")}

    def encode(self, text: str, max_len: int | None = None) -> Encoded:
        """Encode ``text``; if it has more than ``max_len`` tokens, keep the start (specials kept)."""
        if not isinstance(text, str):
            raise TypeError("text must be a string")
        text = text[:MAX_TEXT_CHARS]
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:  # lone surrogates cannot cross into Rust: show them as U+FFFD
            text = "".join("\ufffd" if 0xD800 <= ord(ch) <= 0xDFFF else ch for ch in text)
        enc = self.inner.encode(text, add_special_tokens=False)
        n_special = self.inner.num_special_tokens_to_add(False)
        n_full = len(enc.ids) + n_special
        truncated = False
        if max_len is not None and n_full > max_len:
            enc.truncate(max(max_len - n_special, 0))
            truncated = True
        enc = self.inner.post_process(enc)
        return Encoded(
            ids=tuple(enc.ids),
            tokens=self.labels(enc.tokens),
            offsets=tuple(tuple(o) for o in enc.offsets),
            # added special tokens typed in the text ("<|im_start|>") are special too, not only those the
            # post-processor adds ([CLS], [SEP])
            special=tuple(
                bool(s) or t in self._special for s, t in zip(enc.special_tokens_mask, enc.tokens, strict=True)
            ),
            truncated=truncated,
            n_tokens_full=n_full,
            text=text,
        )

    def fit_note(self, vocab_size: int) -> str | None:
        """A warning when the tokenizer is much smaller than the embedding table (below 80 % of its rows): the
        model was almost surely trained with another tokenizer. Vocabularies padded to a round size (GPT-2's
        50,257 in 50,304 rows) stay well above that."""
        if self.vocab_size >= 0.8 * vocab_size:
            return None
        return (
            f"The tokenizer has {self.vocab_size:,} tokens but the model's embedding table has {vocab_size:,} "
            f"rows, so {vocab_size - self.vocab_size:,} rows are never used: this is probably not the tokenizer "
            "the model was trained with, and its ids then mean other words to the model."
        )

    def check_fits(self, vocab_size: int) -> None:
        """Refuse a tokenizer that can produce ids outside the model's embedding table."""
        if self.vocab_size > vocab_size:
            raise CheckpointError(
                f"the tokenizer has {self.vocab_size} tokens but the model's embedding table has only "
                f"{vocab_size} rows; use the tokenizer the model was trained with"
            )


class IdTokenizer(Tokenizer):
    """Token ids typed as text ("12 873 5"): for a model that came without its tokenizer. Each id is one token,
    labelled by its number; anything that is not an id from 0 to vocab_size − 1 is refused with an example."""

    def __init__(self, vocab_size: int) -> None:
        inner = _HFTokenizer(models.WordLevel(vocab={str(i): i for i in range(vocab_size)}, unk_token="[UNK]"))
        inner.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
        super().__init__(inner)
        self.rows = vocab_size

    @property
    def vocab_size(self) -> int:
        return self.rows

    @property
    def unk_token(self) -> str | None:
        return None

    def encode(self, text: str, max_len: int | None = None) -> Encoded:
        bad = [w for w in str(text)[:MAX_TEXT_CHARS].split() if not (w.isdigit() and int(w) < self.rows)]
        if bad:
            example = " ".join(str(i) for i in range(min(self.rows, 5)))
            raise ValueError(
                f"with the tokenizer “token ids” the text is token ids from 0 to {self.rows - 1:,} separated by "
                f"spaces (for example “{example}”); “{bad[0][:40]}” is not one"
            )
        return super().encode(text, max_len)


def _incomplete(raw: bytes) -> bool:
    """Whether ``raw`` is not whole UTF-8 (it ends inside a character, or holds a stray continuation byte)."""
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError:
        return True
    return False


def _bytes_to_unicode() -> dict[int, str]:
    """GPT-2's printable stand-in for each byte (printable Latin-1 maps to itself, the rest above U+0100)."""
    keep = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), ord("ÿ") + 1)]
    chars, extra = {}, 0
    for b in range(256):
        if b in keep:
            chars[b] = chr(b)
        else:
            chars[b] = chr(256 + extra)
            extra += 1
    return chars


_BYTE_OF = {ch: b for b, ch in _bytes_to_unicode().items()}
