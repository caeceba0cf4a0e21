"""Identity modules that mark the activations worth seeing (after TransformerLens' HookPoint)."""

from __future__ import annotations

import torch
from torch import nn


class HookPoint(nn.Identity):
    """Returns its input unchanged; forward hooks registered on it see (and may replace) the value.

    The module path of a HookPoint (``blocks.0.attn.hook_pattern``) is its public name.
    """

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x
