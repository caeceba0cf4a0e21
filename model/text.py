"""A text in, tokens out, with the notices a user must see: a text cut to a length, characters that could not be
encoded, an empty text, pieces outside the vocabulary."""

from __future__ import annotations

from model.io.tokenizer import MAX_TEXT_CHARS, Encoded, Tokenizer


def encode_text(
    tokenizer: Tokenizer, text: str, max_len: int, model_max: int | None = None
) -> tuple[Encoded, list[str]]:
    """Tokenise up to ``max_len`` tokens; return notices for anything adjusted. ``model_max``: the model's own
    limit when ``max_len`` is a lower one of the caller's (the patterns kept for a long text's first tokens)."""
    notices = []
    if len(text) > MAX_TEXT_CHARS:
        notices.append(f"The text has {len(text):,} characters; only the first {MAX_TEXT_CHARS:,} were read.")
    if any(0xD800 <= ord(ch) <= 0xDFFF for ch in text[:MAX_TEXT_CHARS]):
        notices.append("Some characters could not be encoded (lone surrogates) and were replaced by �.")
    enc = tokenizer.encode(text, max_len=max_len)
    if enc.truncated and model_max is not None and max_len < model_max:
        reads = min(enc.n_tokens_full, model_max)
        cut = f" (the model reads {reads:,})" if reads < enc.n_tokens_full else ""
        notices.append(
            f"The text has {enc.n_tokens_full:,} tokens{cut}. Pages marked “whole text” read all {reads:,}; the "
            f"others show the first {len(enc)}, whose every pattern fits in memory."
        )
    elif enc.truncated:
        notices.append(
            f"The text has {enc.n_tokens_full} tokens; the model reads at most {max_len}, so only the first "
            f"{len(enc)} are shown."
        )
    if not text.strip():
        notices.append("The text is empty: only the special tokens are shown.")
    unk = tokenizer.unk_token
    lost = [enc.text[s:e] for t, (s, e) in zip(enc.tokens, enc.offsets) if unk is not None and t == unk]
    if lost:
        shown = ", ".join(f"“{piece}”" for piece in list(dict.fromkeys(lost))[:8])
        notices.append(
            f"{len(lost)} piece(s) of the text are not in this model's vocabulary and became {unk} (every such "
            f"piece looks the same to the model): {shown}."
        )
    return enc, notices


class Placed(str):
    """A token that keeps its position in the text when tokens are left out around it (special tokens hidden): the
    labels and captions that number a repeated token ("the·5") then count as the rest of the dashboard does."""

    position: int

    def __new__(cls, token: str, position: int = -1) -> Placed:  # pickle calls it with the text alone
        placed = super().__new__(cls, token)
        placed.position = int(position)
        return placed

    def __reduce__(self):
        return Placed, (str(self), self.position)
