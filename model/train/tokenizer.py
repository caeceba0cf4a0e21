"""Train the bundled lower-cased WordPiece tokenizer (``python -m model.train tokenizer``)."""

from __future__ import annotations

import random

from model.io.tokenizer import Tokenizer
from model.train.corpus import load_corpus

SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]


def train_tokenizer(vocab_size: int = 8192, seed: int = 0) -> Tokenizer:
    """A lower-cased BERT-style WordPiece tokenizer trained on the training split."""
    from tokenizers import Tokenizer as HFTokenizer
    from tokenizers import decoders, models, normalizers, pre_tokenizers, processors, trainers

    random.seed(seed)
    train_docs, _ = load_corpus()
    tok = HFTokenizer(models.WordPiece(unk_token="[UNK]"))
    tok.normalizer = normalizers.BertNormalizer(lowercase=True, strip_accents=True, clean_text=True)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.decoder = decoders.WordPiece()
    trainer = trainers.WordPieceTrainer(vocab_size=vocab_size, special_tokens=SPECIALS, min_frequency=2)
    tok.train_from_iterator(train_docs, trainer=trainer)
    cls, sep = tok.token_to_id("[CLS]"), tok.token_to_id("[SEP]")
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B:1 [SEP]:1", special_tokens=[("[CLS]", cls), ("[SEP]", sep)]
    )
    return Tokenizer(tok)
