"""The tokenizer a model folder carries, whatever files it comes as, built with the `tokenizers` library:
``tokenizer.json``; ``vocab.txt`` (WordPiece, with tokenizer_config.json's casing); ``vocab.json`` + ``merges.txt``
(byte-level BPE, GPT-2's or RoBERTa's); ``tokenizer.model`` (SentencePiece, read by model/io/spm.py); or the
tokenizer inside a ``.gguf`` beside the weights. Each is built as transformers 5 builds it from the same files
(tests/fixtures/tokenizers compares the ids). When none is there, the caller is told which files were looked for —
never handed a default whose vocabulary merely has the right size."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from tokenizers import AddedToken, decoders, models, normalizers, pre_tokenizers, processors
from tokenizers import Tokenizer as _HFTokenizer

from model.errors import CheckpointError
from model.io.budget import parse_json
from model.io.spm import CONTROL, read_spm, spm_tokenizer
from model.io.tokenizer import Tokenizer

MAX_VOCAB_FILE_BYTES = 64 * 1024 * 1024  # vocab.txt, vocab.json, merges.txt, tokenizer_config.json
LOOKED_FOR = "tokenizer.json, vocab.txt, vocab.json + merges.txt, tokenizer.model or a .gguf"
WITHOUT_GGUF = "tokenizer.json, vocab.txt, vocab.json + merges.txt or tokenizer.model"
#: tokenizer classes whose vocab.json + merges.txt we build as transformers does (others split text differently)
BYTE_BPE = {"GPT2Tokenizer": "gpt2", "RobertaTokenizer": "roberta", "BartTokenizer": "roberta"}
#: families that add BOS to every text from a tokenizer.model unless tokenizer_config.json says otherwise
SPM_BOS = ("llama", "mistral", "gemma", "gemma2", "gemma3", "gemma3_text", "phi3")


def _text(path: Path) -> str:
    if path.stat().st_size > MAX_VOCAB_FILE_BYTES:
        raise CheckpointError(f"{path.name} is larger than {MAX_VOCAB_FILE_BYTES // 2**20} MB; real ones are smaller")
    try:
        return path.read_text(encoding="utf-8")
    except OSError as exc:
        raise CheckpointError(f"{path.name} cannot be read ({exc.strerror or type(exc).__name__})") from None
    except UnicodeDecodeError as exc:
        raise CheckpointError(f"{path.name} is not UTF-8 text: {exc.reason}") from None


def tokenizer_config(folder: Path) -> dict[str, Any]:
    path = folder / "tokenizer_config.json"
    if not path.is_file():
        return {}
    try:
        raw = parse_json(_text(path), "tokenizer_config.json", "vocab")
    except ValueError as exc:
        raise CheckpointError(str(exc)) from None
    return raw if isinstance(raw, dict) else {}


def _token(value: Any, default: str | None) -> str | None:
    """A special token as tokenizer_config.json writes it: a string, or {"content": …} (older files)."""
    if isinstance(value, dict):
        value = value.get("content")
    return value if isinstance(value, str) and value else default


def _added(conf: Mapping[str, Any], vocab: Mapping[str, int]) -> list[AddedToken]:
    """tokenizer_config.json's added tokens (those in the vocabulary), special or not, kept whole when typed."""
    found = []
    entries = conf.get("added_tokens_decoder")
    for entry in entries.values() if isinstance(entries, dict) else ():
        if isinstance(entry, dict) and isinstance(entry.get("content"), str) and entry["content"] in vocab:
            found.append(
                AddedToken(
                    entry["content"],
                    special=bool(entry.get("special", True)),
                    lstrip=bool(entry.get("lstrip", False)),
                    rstrip=bool(entry.get("rstrip", False)),
                    normalized=bool(entry.get("normalized", False)),
                    single_word=bool(entry.get("single_word", False)),
                )
            )
    return found


def wordpiece(folder: Path, conf: Mapping[str, Any]) -> _HFTokenizer:
    """BERT's WordPiece from vocab.txt, as transformers 5's BertTokenizer builds it."""
    vocab: dict[str, int] = {}
    for line in _text(folder / "vocab.txt").splitlines():
        vocab.setdefault(line.rstrip("\n"), len(vocab))
    unk, cls, sep = (
        _token(conf.get(k), d) for k, d in (("unk_token", "[UNK]"), ("cls_token", "[CLS]"), ("sep_token", "[SEP]"))
    )
    tok = _HFTokenizer(models.WordPiece(vocab, unk_token=unk))
    tok.normalizer = normalizers.BertNormalizer(
        clean_text=True,
        handle_chinese_chars=bool(conf.get("tokenize_chinese_chars", True)),
        strip_accents=conf.get("strip_accents") if isinstance(conf.get("strip_accents"), bool) else None,
        lowercase=bool(conf.get("do_lower_case", True)),
    )
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.decoder = decoders.WordPiece(prefix="##")
    specials = [_token(conf.get(k), d) for k, d in (("pad_token", "[PAD]"), ("mask_token", "[MASK]"))] + [unk, cls, sep]
    tok.add_special_tokens([AddedToken(t, special=True, normalized=False) for t in specials if t in vocab])
    tok.add_special_tokens(_added(conf, vocab))  # last: the file's own options (lstrip, …) win
    if cls in vocab and sep in vocab:
        tok.post_processor = processors.TemplateProcessing(
            single=f"{cls}:0 $A:0 {sep}:0",
            pair=f"{cls}:0 $A:0 {sep}:0 $B:1 {sep}:1",
            special_tokens=[(cls, vocab[cls]), (sep, vocab[sep])],
        )
    return tok


def byte_bpe(folder: Path, conf: Mapping[str, Any], style: str) -> _HFTokenizer:
    """GPT-2's or RoBERTa's byte-level BPE from vocab.json + merges.txt, as transformers 5 builds them."""
    try:
        vocab = parse_json(_text(folder / "vocab.json"), "vocab.json", "vocab")
    except ValueError as exc:
        raise CheckpointError(str(exc)) from None
    if not isinstance(vocab, dict) or not all(isinstance(v, int) for v in vocab.values()):
        raise CheckpointError("vocab.json must map each token to its id")
    lines = [m for m in _text(folder / "merges.txt").splitlines() if m and not m.startswith("#version")]
    merges = [tuple(m.split(" ")) for m in lines]
    if any(len(m) != 2 for m in merges):
        raise CheckpointError("merges.txt must hold one merge, two pieces and a space, per line")
    prefix = bool(conf.get("add_prefix_space", False))
    tok = _HFTokenizer(
        models.BPE(vocab=vocab, merges=merges, continuing_subword_prefix="", end_of_word_suffix="", fuse_unk=False)
    )
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=prefix)
    tok.decoder = decoders.ByteLevel()
    if style == "roberta":
        names = {k: _token(conf.get(f"{k}_token"), d) for k, d in (("cls", "<s>"), ("sep", "</s>"), ("unk", "<unk>"))}
        names |= {k: _token(conf.get(f"{k}_token"), d) for k, d in (("pad", "<pad>"), ("mask", "<mask>"))}
        tok.add_special_tokens([AddedToken(t, special=True, normalized=False) for t in names.values() if t in vocab])
        if names["cls"] in vocab and names["sep"] in vocab:
            tok.post_processor = processors.RobertaProcessing(
                (names["sep"], vocab[names["sep"]]),
                (names["cls"], vocab[names["cls"]]),
                trim_offsets=bool(conf.get("trim_offsets", True)),
                add_prefix_space=prefix,
            )
    else:
        end = _token(conf.get("eos_token"), "<|endoftext|>")
        if end in vocab:
            tok.add_special_tokens([AddedToken(end, special=True, normalized=False)])
        bos = _token(conf.get("bos_token"), "<|endoftext|>")
        if conf.get("add_bos_token") and bos in vocab:
            tok.post_processor = processors.TemplateProcessing(
                single=f"{bos}:0 $A:0", special_tokens=[(bos, vocab[bos])]
            )
    tok.add_special_tokens(_added(conf, vocab))
    return tok


def sentencepiece(folder: Path, conf: Mapping[str, Any], model_type: str) -> _HFTokenizer:
    """A SentencePiece tokenizer.model, with BOS (and EOS) added as tokenizer_config.json asks."""
    path = folder / "tokenizer.model"
    if path.stat().st_size > 64 * 1024 * 1024:
        raise CheckpointError("tokenizer.model is larger than 64 MB; real ones are a few MB")
    spm = read_spm(path.read_bytes())
    tok = spm_tokenizer(spm)
    vocab = {p: i for i, (p, _, _) in reversed(list(enumerate(spm.pieces)))}
    tok.add_special_tokens([AddedToken(p, special=True, normalized=False) for p, _, k in spm.pieces if k == CONTROL])
    tok.add_special_tokens(_added(conf, vocab))
    piece = {i: p for i, (p, _, _) in enumerate(spm.pieces)}
    bos, eos = (
        _token(conf.get("bos_token"), piece.get(spm.bos_id)),
        _token(conf.get("eos_token"), piece.get(spm.eos_id)),
    )
    add_bos = conf.get("add_bos_token", model_type in SPM_BOS)
    add_eos = conf.get("add_eos_token", False)
    parts = (
        ([f"{bos}:0"] if add_bos and bos in vocab else [])
        + ["$A:0"]
        + ([f"{eos}:0"] if add_eos and eos in vocab else [])
    )
    if len(parts) > 1:
        used = {t for t in (bos if add_bos else None, eos if add_eos else None) if t in vocab}
        tok.post_processor = processors.TemplateProcessing(
            single=" ".join(parts), special_tokens=[(t, vocab[t]) for t in sorted(used)]
        )
    return tok


def _gguf_beside(folder: Path) -> Path | None:
    found = sorted(p for p in folder.iterdir() if p.is_file() and p.suffix.lower() == ".gguf")
    return found[0] if len(found) == 1 else None


def folder_tokenizer(
    folder: Path, raw: Mapping[str, Any], *, gguf: bool = True
) -> tuple[Tokenizer | None, str, list[str]]:
    """(the folder's tokenizer or None, where it came from — or what was looked for —, the files read); ``gguf``:
    whether a lone .gguf in the folder counts (not beside a .gguf being loaded itself)."""
    conf = tokenizer_config(folder)
    conf_file = ["tokenizer_config.json"] if conf else []
    kind = str(raw.get("model_type", ""))
    if (folder / "tokenizer.json").is_file():
        return Tokenizer.from_file(folder / "tokenizer.json"), "tokenizer.json", ["tokenizer.json"]
    if (folder / "vocab.txt").is_file():
        casing = "lowercased" if conf.get("do_lower_case", True) else "cased"
        tok = Tokenizer(wordpiece(folder, conf))
        return tok, f"vocab.txt (WordPiece, {casing}, as tokenizer_config.json says)", ["vocab.txt", *conf_file]
    if (folder / "vocab.json").is_file() and (folder / "merges.txt").is_file():
        cls = str(conf.get("tokenizer_class", "")).removesuffix("Fast")
        style = BYTE_BPE.get(cls) or ("roberta" if kind in ("roberta", "bart") else "gpt2" if not cls else "")
        if not style:
            raise CheckpointError(
                f"this folder's tokenizer is a {cls} as vocab.json + merges.txt, which splits text its own way; "
                "save its tokenizer.json beside the weights (tokenizer.save_pretrained(folder) writes it)"
            )
        tok = Tokenizer(byte_bpe(folder, conf, style))
        what = "RoBERTa's" if style == "roberta" else "GPT-2's"
        return tok, f"vocab.json + merges.txt ({what} byte-level BPE)", ["vocab.json", "merges.txt", *conf_file]
    if (folder / "tokenizer.model").is_file():
        tok = Tokenizer(sentencepiece(folder, conf, kind))
        return tok, "tokenizer.model (SentencePiece)", ["tokenizer.model", *conf_file]
    found = _gguf_beside(folder) if gguf else None
    if found is not None:
        from model.io.gguf import gguf_file_tokenizer

        return gguf_file_tokenizer(found), f"{found.name} (the GGUF file's own tokenizer)", [found.name]
    return None, f"none in the folder (looked for {LOOKED_FOR if gguf else WITHOUT_GGUF})", []
