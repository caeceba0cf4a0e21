"""Which words the tokenizer cut into pieces: the masked-token lesson says so beside its predictions."""

from __future__ import annotations


def split_words(tokens, special) -> list[tuple[str, list[str]]]:
    """Words the tokenizer cut into pieces, as (word, pieces): WordPiece continuations start with "##"."""
    words: list[tuple[str, list[str]]] = []
    for token, is_special in zip(tokens, special, strict=True):
        if not is_special and token.startswith("##") and words and not words[-1][0].startswith("["):
            word, pieces = words[-1]
            words[-1] = (word + token[2:], [*pieces, token])
        else:
            words.append(("[special]" if is_special else token, [token]))
    return [(w, p) for w, p in words if len(p) > 1]


def split_note(tokens, special) -> str:
    """One sentence for the masked-token lesson: which words are several tokens (each piece is guessed alone)."""
    split = split_words(tokens, special)
    if not split:
        return "Every word of this text is a single token."
    shown = "; ".join(f"“{w}” → {' '.join(p)}" for w, p in split[:6])
    more = f" and {len(split) - 6} more" if len(split) > 6 else ""
    return (
        f"The tokenizer cuts {len(split)} word{'s' if len(split) > 1 else ''} into pieces: {shown}{more}. "
        "Each piece is masked and guessed on its own."
    )
