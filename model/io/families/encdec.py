"""What the encoder–decoder families (T5, BART, mBART) share: building the two stacks from one folder into one
:class:`model.encdec.EncoderDecoder`, the tokenizer each stack reads with, and opening one stack for the pages."""

from __future__ import annotations

from dataclasses import replace

import torch
from tokenizers import Tokenizer as _HFTokenizer

from model.config import TransformerConfig
from model.encdec import EncoderDecoder, bound_decoder, encoder_of
from model.errors import CheckpointError
from model.io.families.common import Folder, described
from model.io.state import LoadedModel, load_into
from model.io.tokenizer import Encoded, Tokenizer

#: the longest source the encoder reads when a stack is opened (T5's relative positions have no table to end)
MAX_SOURCE = 1024


def build_pair(
    src: Folder,
    enc: TransformerConfig,
    dec: TransformerConfig,
    state: dict[str, torch.Tensor],
    family: str,
    start: list[int],
) -> LoadedModel:
    """Account for every tensor, build the encoder–decoder from ``state`` (names below ``encoder.`` and
    ``decoder.``), find the tokenizer; ``start``: the ids the decoder's input begins with (its start token, then
    whatever the tokenizer puts first), kept in ``info["decoder_start"]``."""
    rest = src.ledger.settle()
    if rest:
        raise CheckpointError(f"the file holds tensors this {family} does not use: {', '.join(sorted(rest)[:8])}")
    try:
        model = EncoderDecoder(enc, dec)
    except ValueError as exc:
        raise CheckpointError(f"this model cannot be built: {exc}") from None
    notes = load_into(model, state)
    tokenizer, report, info = described(src, family)
    info["decoder_start"] = list(start)
    loaded = LoadedModel(model=model, tokenizer=None, info=info, warnings=notes)  # type: ignore[arg-type]
    if tokenizer is not None:
        loaded.attach_tokenizer(tokenizer)
    loaded.report = report
    return loaded


class DecoderTokenizer(Tokenizer):
    """A tokenizer whose texts become a decoder's input: the labels the model's tokenizer makes of a target, shifted
    right as transformers trains — the decoder's start ids (T5: <pad>; BART: </s>) first, the end token (the last
    position's prediction) dropped. A target "The cat" is "<pad> ▁The ▁cat" for T5 and "</s> <s> The Ġcat" for BART."""

    def __init__(self, tok: Tokenizer, start: list[int]) -> None:
        super().__init__(_HFTokenizer.from_str(tok.to_str()))
        names = [self.inner.id_to_token(i) for i in start]
        if not start or any(n is None for n in names):
            raise CheckpointError(f"the decoder's start ids {start} are not in the tokenizer's vocabulary")
        self.start, self.start_tokens = tuple(start), self.labels(names)

    def encode(self, text: str, max_len: int | None = None) -> Encoded:
        enc = super().encode(text, None if max_len is None else max(max_len - len(self.start) + 1, 1))
        keep = len(enc.ids) - (1 if enc.special and enc.special[-1] else 0)  # the end token is what is predicted
        n = len(self.start)
        return replace(
            enc,
            ids=self.start + enc.ids[:keep],
            tokens=self.start_tokens + enc.tokens[:keep],
            offsets=((0, 0),) * n + enc.offsets[:keep],
            special=(True,) * n + enc.special[:keep],
            n_tokens_full=enc.n_tokens_full + n - (len(enc.ids) - keep),
        )


def is_pair(loaded: LoadedModel) -> bool:
    """Does ``loaded`` hold an encoder–decoder (two stacks) rather than one transformer?"""
    return isinstance(loaded.model, EncoderDecoder)


def open_stack(loaded: LoadedModel, stack: str, source: str = "") -> LoadedModel:
    """One stack of an encoder–decoder as the pages open a model: ``"encoder"`` (bidirectional self-attention over
    the text) or ``"decoder"`` (the text is the target; its cross-attention reads ``source``, encoded once and bound
    to each block). The decoder's ``info`` names the source's text and tokens, the keys of its cross-attention."""
    if not is_pair(loaded):
        raise ValueError("only an encoder–decoder has stacks to open")
    model = loaded.model
    assert isinstance(model, EncoderDecoder)
    info = {k: v for k, v in loaded.info.items() if k != "decoder_start"}
    if stack == "encoder":
        info["name"] = f"{loaded.name} — its encoder"
        out = LoadedModel(encoder_of(model), loaded.tokenizer, info, list(loaded.warnings), loaded.report)
        return out
    if stack != "decoder":
        raise ValueError(f"an encoder–decoder opens its 'encoder' or its 'decoder', not {stack!r}")
    if loaded.tokenizer is None:
        raise CheckpointError("this encoder–decoder came without a tokenizer: its source cannot be encoded")
    text = source.strip() or DEFAULT_SOURCE
    limit = min(model.encoder.cfg.max_seq_len, MAX_SOURCE)
    enc = loaded.tokenizer.encode(text, max_len=limit)
    ids = torch.tensor([enc.ids], dtype=torch.long)  # (1, S)
    info["name"] = f"{loaded.name} — its decoder"
    info["source_text"], info["source_tokens"] = text, list(enc.tokens)
    if enc.truncated:
        info["source_note"] = f"The source was cut to the encoder's {limit} tokens (it had {enc.n_tokens_full})."
    start = loaded.info.get("decoder_start") or []
    tok = DecoderTokenizer(loaded.tokenizer, list(start)) if start else loaded.tokenizer
    return LoadedModel(bound_decoder(model, ids), tok, info, list(loaded.warnings), loaded.report)


#: the source a decoder reads when none is given
DEFAULT_SOURCE = "The animal didn't cross the street because it was too tired."
