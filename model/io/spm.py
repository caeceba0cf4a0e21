"""SentencePiece's ``tokenizer.model`` read without the sentencepiece package: a bounded reader of the few protobuf
fields a tokenizer needs (the pieces with their scores and types, the trainer's model type, byte fallback and special
ids, the normalizer's settings), and the `tokenizers` tokenizer that encodes as ``SentencePieceProcessor.encode``
does — the recipe of transformers 5's ``build_tokenizer_from_spm_proto``, checked against sentencepiece itself by
tests/fixtures/tokenizers (scripts/make_tokenizer_fixtures.py)."""

from __future__ import annotations

import re
import struct
from dataclasses import dataclass, field

from tokenizers import Regex, decoders, models, normalizers, pre_tokenizers
from tokenizers import Tokenizer as _HFTokenizer

from model.errors import CheckpointError

MAX_SPM_BYTES = 64 * 1024 * 1024  # Gemma 3's tokenizer.model is 4.7 MB; LLaMA's 0.5 MB
MAX_PIECES = 2_000_000
NORMAL, UNKNOWN, CONTROL, USER_DEFINED, UNUSED, BYTE = 1, 2, 3, 4, 5, 6
UNIGRAM, BPE = 1, 2


@dataclass
class SpmModel:
    """The parts of a SentencePiece ModelProto a tokenizer needs (defaults as sentencepiece_model.proto gives)."""

    pieces: list[tuple[str, float, int]] = field(default_factory=list)  # (piece, score, type)
    model_type: int = UNIGRAM
    byte_fallback: bool = False
    unk_id: int = 0
    bos_id: int = 1
    eos_id: int = 2
    charsmap: bytes = b""
    add_dummy_prefix: bool = True
    remove_extra_whitespaces: bool = True
    escape_whitespaces: bool = True


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        if pos >= len(data) or shift > 63:
            raise CheckpointError("tokenizer.model is damaged: a number runs past its end")
        byte = data[pos]
        value |= (byte & 0x7F) << shift
        pos, shift = pos + 1, shift + 7
        if byte < 0x80:
            return value, pos


def _fields(data: bytes):
    """(field number, wire type, value) of one protobuf message: ints for varints, bytes for the rest."""
    pos = 0
    while pos < len(data):
        key, pos = _varint(data, pos)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, pos = _varint(data, pos)
        elif wire == 1:
            value, pos = data[pos : pos + 8], pos + 8
        elif wire == 2:
            size, pos = _varint(data, pos)
            value, pos = data[pos : pos + size], pos + size
        elif wire == 5:
            value, pos = data[pos : pos + 4], pos + 4
        else:
            raise CheckpointError(f"tokenizer.model is not a SentencePiece model (protobuf wire type {wire})")
        if pos > len(data):
            raise CheckpointError("tokenizer.model is damaged or cut short")
        yield number, wire, value


def _signed(value: int) -> int:
    """An int32 written as a varint (negative numbers take ten bytes)."""
    return value - (1 << 64) if value >= 1 << 63 else value


def read_spm(data: bytes) -> SpmModel:
    """The tokenizer's parts of a ``tokenizer.model`` file; a CheckpointError for anything that is not one."""
    if len(data) > MAX_SPM_BYTES:
        raise CheckpointError(f"tokenizer.model is larger than {MAX_SPM_BYTES // 2**20} MB; real ones are a few MB")
    out = SpmModel()
    for number, wire, value in _fields(data):
        if number == 1 and wire == 2:
            piece, score, kind = "", 0.0, NORMAL
            for n, w, v in _fields(value):
                if n == 1 and w == 2:
                    piece = v.decode("utf-8", errors="strict")
                elif n == 2 and w == 5:
                    (score,) = struct.unpack("<f", v)
                elif n == 3 and w == 0:
                    kind = v
            out.pieces.append((piece, score, kind))
            if len(out.pieces) > MAX_PIECES:
                raise CheckpointError(f"tokenizer.model holds more than {MAX_PIECES:,} pieces")
        elif number == 2 and wire == 2:
            for n, w, v in _fields(value):
                if w != 0:
                    continue
                if n == 3:
                    out.model_type = v
                elif n == 35:
                    out.byte_fallback = bool(v)
                elif n == 40:
                    out.unk_id = _signed(v)
                elif n == 41:
                    out.bos_id = _signed(v)
                elif n == 42:
                    out.eos_id = _signed(v)
        elif number == 3 and wire == 2:
            for n, w, v in _fields(value):
                if n == 2 and w == 2:
                    out.charsmap = v
                elif n == 3 and w == 0:
                    out.add_dummy_prefix = bool(v)
                elif n == 4 and w == 0:
                    out.remove_extra_whitespaces = bool(v)
                elif n == 5 and w == 0:
                    out.escape_whitespaces = bool(v)
    if not out.pieces:
        raise CheckpointError("tokenizer.model holds no vocabulary: it is not a SentencePiece model")
    if out.model_type not in (UNIGRAM, BPE):
        kind = {3: "word", 4: "char"}.get(out.model_type, str(out.model_type))
        raise CheckpointError(f"tokenizer.model is a SentencePiece {kind} model; only unigram and BPE models are read")
    return out


def _merges(spm: SpmModel) -> list[tuple[str, str]]:
    """BPE merges ranked by the merged piece's score (then its id), over normal pieces only."""
    normal = {p: (score, i) for i, (p, score, kind) in enumerate(spm.pieces) if kind == NORMAL}
    ranked = []
    for token, (score, index) in normal.items():
        for split in range(1, len(token)):
            left, right = token[:split], token[split:]
            if left in normal and right in normal:
                ranked.append((-score, index, left, right))
    return [(left, right) for _, _, left, right in sorted(ranked)]


def spm_tokenizer(spm: SpmModel) -> _HFTokenizer:
    """A `tokenizers` tokenizer that encodes as SentencePiece does (legacy dummy prefix on every chunk), without
    special tokens or a post-processor: the caller adds what the model's config asks for."""
    try:
        user_defined = [p for p, _, kind in spm.pieces if kind == USER_DEFINED]
        unk = spm.pieces[spm.unk_id][0] if 0 <= spm.unk_id < len(spm.pieces) else "<unk>"
        if spm.model_type == BPE:
            vocab = {}
            for i, (p, _, _) in enumerate(spm.pieces):
                vocab.setdefault(p, i)
            model = models.BPE(
                vocab=vocab,
                merges=_merges(spm),
                unk_token=unk,
                fuse_unk=True,
                byte_fallback=spm.byte_fallback,
                ignore_merges=bool(user_defined),
            )
        else:
            model = models.Unigram([(p, s) for p, s, _ in spm.pieces], spm.unk_id, spm.byte_fallback)
        tok = _HFTokenizer(model)
        steps = [normalizers.Precompiled(spm.charsmap)] if spm.charsmap else []
        if spm.remove_extra_whitespaces:  # spaces only: SentencePiece leaves newlines alone
            steps += [normalizers.Replace(Regex(r"\A +| +\z"), ""), normalizers.Replace(Regex(" {2,}"), " ")]
        if spm.escape_whitespaces:
            steps.append(normalizers.Replace(" ", "▁"))
        if spm.add_dummy_prefix:  # Metaspace skips the prefix when the text starts with "▁"; SentencePiece does not
            steps.append(normalizers.Replace(Regex(r"\A▁"), "▁▁"))
        tok.normalizer = normalizers.Sequence(steps)
        pre = []
        if spm.add_dummy_prefix:
            pre.append(pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="always", split=False))
        if user_defined:
            pattern = "|".join(re.escape(p) for p in sorted(user_defined, key=len, reverse=True))
            pre.append(pre_tokenizers.Split(Regex(pattern), behavior="isolated"))
        if pre:
            tok.pre_tokenizer = pre_tokenizers.Sequence(pre)
        steps_out = [decoders.Replace("▁", " ")]
        if spm.byte_fallback:
            steps_out.append(decoders.ByteFallback())
        if spm.add_dummy_prefix:
            steps_out += [decoders.Fuse(), decoders.Strip(content=" ", left=1)]
        elif spm.byte_fallback:
            steps_out.append(decoders.Fuse())
        tok.decoder = decoders.Sequence(steps_out)
    except Exception as exc:  # the Rust side raises plain Exception subclasses
        raise CheckpointError(f"could not build a tokenizer from tokenizer.model: {exc}") from None
    return tok
