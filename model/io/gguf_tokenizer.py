"""The tokenizers a GGUF file describes, built with the `tokenizers` library: byte-level BPE from its vocabulary and
merges (SmolLM2, Qwen, GPT-2 style), and Gemma's SentencePiece vocabulary with its merges rebuilt."""

from __future__ import annotations

from tokenizers import AddedToken, decoders, models, normalizers, pre_tokenizers, processors
from tokenizers import Tokenizer as _HFTokenizer

from model.errors import CheckpointError
from model.io.tokenizer import Tokenizer


def byte_level_bpe(vocab: list[str], merges: list[str], special: list[str], *, split_digits: bool) -> Tokenizer:
    """A byte-level BPE tokenizer (GPT-2 style) from its vocabulary (id order), merges ("a b") and special
    tokens; ``split_digits`` puts every digit in its own piece first (SmolLM's pre-tokenizer)."""
    try:
        pairs = [tuple(m.split(" ", 1)) for m in merges]
        bpe = models.BPE(vocab={tok: i for i, tok in enumerate(vocab)}, merges=pairs, fuse_unk=False)
        inner = _HFTokenizer(bpe)
        byte_level = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
        inner.pre_tokenizer = (
            pre_tokenizers.Sequence([pre_tokenizers.Digits(individual_digits=True), byte_level])
            if split_digits
            else byte_level
        )
        inner.decoder = decoders.ByteLevel()
        # no post-processor: a token's offsets then include its leading space, which it does encode
        inner.add_special_tokens([AddedToken(t, special=True, normalized=False) for t in special])
    except Exception as exc:  # the Rust side raises plain Exception subclasses
        raise CheckpointError(f"could not build the tokenizer: {exc}") from None
    return Tokenizer(inner)


def _merges_from_vocabulary(vocab: dict[str, int]) -> list[tuple[str, str]]:
    """The merges a sentencepiece vocabulary without merges implies (as Hugging Face rebuilds them): every split of a
    token into two tokens, best first — by the token's place in the file (Gemma's scores do not follow the merge
    order; its file order does), then the longer left piece, then the longer right piece."""
    found = []
    for token, index in vocab.items():
        local = [(token[:i], token[i:]) for i in range(1, len(token)) if token[:i] in vocab and token[i:] in vocab]
        local.sort(key=lambda pair: (vocab[pair[0]], vocab[pair[1]]))
        found.extend((left, right, -index) for left, right in local)
    found.sort(key=lambda m: (m[2], len(m[0]), len(m[1])), reverse=True)  # stable: ties keep their order
    return [(left, right) for left, right, _ in found]


def gemma_sentencepiece(tokens: list[str], types: list[int], bos: str | None) -> Tokenizer:
    """Gemma's tokenizer from a GGUF file (``tokenizer.ggml.model = llama``): a BPE over the whole text with byte
    fallback, spaces written as "▁", merges rebuilt from the vocabulary, control tokens (type 3) special and
    user-defined ones (type 4) kept whole, ``bos`` put in front of every text. A token of spaces is stored as spaces
    but looked up as "▁▁", so it is respelled first."""
    try:
        spelled = ["▁" * len(t) if t and not t.strip() and " " in t else t for t in tokens]
        vocab = {}
        for i, t in enumerate(spelled):
            vocab.setdefault(t, i)
        unk = next((t for t, kind in zip(spelled, types, strict=True) if int(kind) == 2), "<unk>")
        bpe = models.BPE(
            vocab=vocab, merges=_merges_from_vocabulary(vocab), fuse_unk=True, unk_token=unk, byte_fallback=True
        )
        inner = _HFTokenizer(bpe)
        inner.normalizer = normalizers.Replace(" ", "▁")
        inner.pre_tokenizer = pre_tokenizers.Split(pattern=" ", behavior="merged_with_previous", invert=False)
        inner.decoder = decoders.Sequence([decoders.Replace("▁", " "), decoders.ByteFallback(), decoders.Fuse()])
        inner.add_special_tokens(
            [AddedToken(t, special=True, normalized=False) for t, k in zip(spelled, types, strict=True) if int(k) == 3]
        )
        inner.add_tokens(
            [AddedToken(t, special=False, normalized=False) for t, k in zip(spelled, types, strict=True) if int(k) == 4]
        )
        if bos is not None and bos in vocab:
            inner.post_processor = processors.TemplateProcessing(
                single=f"{bos} $A", pair=f"{bos} $A {bos} $B", special_tokens=[(bos, vocab[bos])]
            )
    except Exception as exc:  # the Rust side raises plain Exception subclasses
        raise CheckpointError(f"could not build the tokenizer: {exc}") from None
    return Tokenizer(inner)
