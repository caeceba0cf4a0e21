"""How a fresh :class:`model.transformer.Transformer` is initialised, and ALBERT's one layer shared by all."""

from __future__ import annotations

from torch import nn

from model.moe import MoE
from model.norms import RMSNorm


def reset(model: nn.Module) -> None:
    """The classic recipe: N(0, d_model^-0.5) embeddings, Xavier-uniform linears, zero biases, unit norms."""
    std = model.cfg.d_model**-0.5
    for module in model.modules():
        if isinstance(module, nn.Embedding):
            nn.init.normal_(module.weight, 0.0, std)
        elif isinstance(module, nn.Linear):
            nn.init.xavier_uniform_(module.weight)
            if module.bias is not None:
                nn.init.zeros_(module.bias)
        elif isinstance(module, nn.LayerNorm):
            nn.init.ones_(module.weight)
            nn.init.zeros_(module.bias)
        elif isinstance(module, MoE):
            module.experts.reset_parameters()
        elif isinstance(module, RMSNorm):
            nn.init.constant_(module.weight, 1.0 - module.offset)  # a unit scale, whatever the storage


def share_layers(model: nn.Module) -> None:
    """ALBERT: every block holds block 0's parameters (the same tensors), while each keeps its own hook points, so a
    capture still tells layer 3 from layer 1."""
    first = dict(model.blocks[0].named_modules())
    for block in model.blocks[1:]:
        for name, module in block.named_modules():
            for key in list(module._parameters):
                module._parameters[key] = first[name]._parameters[key]
