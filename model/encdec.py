"""The post's other half: an encoder–decoder (Vaswani et al., 2017). The encoder is the post's encoder; the
decoder is the same transformer with causal self-attention and a cross-attention sublayer in every block that reads
the encoder's output (``TransformerConfig.cross_attention``), then a next-token head. The toy of “Watch it learn”
and imported T5 and BART models are this one class; each page opens one stack (:func:`open_stack`)."""

from __future__ import annotations

import copy

import torch
from torch import nn

from model.config import TransformerConfig
from model.transformer import Transformer


def decoder_config(cfg: TransformerConfig) -> TransformerConfig:
    """The decoder of an encoder with config ``cfg``: causal, cross-attention in every block, a next-token head."""
    return cfg.replace(causal=True, cross_attention=True, lm_head=True, mlm_head=False)


class EncoderDecoder(nn.Module):
    """source ids (B, S) and target ids (B, T) -> the decoder's hidden states (B, T, d_model).

    ``cfg`` is the encoder's; the decoder's is ``decoder_cfg`` (an imported model's own: T5's decoder buckets its
    relative positions one way) or, by default, :func:`decoder_config` of it (the toy's)."""

    def __init__(self, cfg: TransformerConfig, decoder_cfg: TransformerConfig | None = None) -> None:
        super().__init__()
        self.cfg = cfg
        self.encoder = Transformer(cfg.replace(causal=False, lm_head=False, mlm_head=False))
        dec = decoder_config(cfg) if decoder_cfg is None else decoder_cfg
        if not (dec.causal and dec.cross_attention and dec.lm_head) or dec.d_model != cfg.d_model:
            raise ValueError("the decoder must be causal, with cross-attention, a next-token head and the same d_model")
        self.decoder = Transformer(dec)

    def forward(self, source: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        memory = self.encoder(source)  # (B, S, d_model)
        return self.decoder(target, memory=memory)  # (B, T, d_model)

    def lm_logits(self, hidden: torch.Tensor) -> torch.Tensor:
        """hidden (B, T, d_model) -> next-token logits (B, T, V) through the decoder's tied embeddings."""
        return self.decoder.lm_logits(hidden)

    @torch.no_grad()
    def cross_patterns(self, source: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        """Every decoder layer's cross-attention weights: (B, L, H, T, S). Hooks exist only during this call."""
        found: dict[int, torch.Tensor] = {}
        handles = []
        try:
            for i, block in enumerate(self.decoder.blocks):
                point = block.cross.hook_pattern
                handles.append(point.register_forward_hook(lambda _m, _a, out, i=i: found.__setitem__(i, out)))
            self(source, target)
        finally:
            for handle in handles:
                handle.remove()
        return torch.stack([found[i] for i in range(len(self.decoder.blocks))], dim=1)  # (B, L, H, T, S)


@torch.no_grad()
def bound_decoder(model: EncoderDecoder, source: torch.Tensor) -> Transformer:
    """A copy of ``model``'s decoder that reads ``source`` (1, S) on every call: the encoder's output (1, S, d_model)
    is bound to each block (``TransformerBlock.memory``), so the decoder runs as one transformer of target ids
    (B, T) and every page can capture it; its cross-attention is the ``cross_pattern`` capture kind."""
    if source.dim() != 2 or source.size(0) != 1:
        raise ValueError(f"source must be one sequence of ids (1, S), got shape {tuple(source.shape)}")
    was = model.training
    model.eval()
    try:
        memory = model.encoder(source)  # (1, S, d_model)
    finally:
        model.train(was)
    decoder = copy.deepcopy(model.decoder).eval()
    for block in decoder.blocks:
        block.memory = memory.detach().clone()
    return decoder


def encoder_of(model: EncoderDecoder) -> Transformer:
    """A copy of ``model``'s encoder (bidirectional self-attention over the source), for the other pages."""
    return copy.deepcopy(model.encoder).eval()
