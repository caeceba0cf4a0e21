"""The key/value cache of step-by-step generation (Pope et al., 2022): each layer's keys and values of the tokens seen
so far, grown in place.

Shapes: B batch, H_kv key/value heads, P cached positions, N new ones, d_k head width.
"""

from __future__ import annotations

import torch


class KVCache:
    """Keys and values of the tokens seen so far, one (k, v) pair per layer, for step-by-step generation.

    k, v: (B, H_kv, P, d_k) after RoPE, so a new token only computes its own projections (Pope et al.'s
    "KV cache"; nothing is recomputed for the P earlier positions).
    """

    def __init__(self, n_layers: int) -> None:
        self.layers: list[tuple[torch.Tensor, torch.Tensor] | None] = [None] * n_layers
        # per layer, storage with room after the cached positions, which ``layers`` holds views of (None until a
        # layer is extended after its first pass)
        self._room: list[tuple[torch.Tensor, torch.Tensor] | None] = [None] * n_layers
        self._mine: list[tuple[torch.Tensor, torch.Tensor] | None] = [None] * n_layers  # the views last returned

    @property
    def length(self) -> int:
        """Positions already cached (0 before the first forward pass); read before a forward pass starts."""
        return self.cached(0)

    def cached(self, layer: int) -> int:
        """Positions cached for ``layer`` (during a forward pass, earlier layers have already grown)."""
        entry = self.layers[layer]
        return 0 if entry is None else entry[0].size(-2)

    def truncate(self, length: int) -> None:
        """Keep the first ``length`` positions of every layer (a shared prefix, read once for several texts that
        begin with it). Tensors returned before keep their values: the next extension copies the kept positions into
        new room instead of writing where an earlier view still reads."""
        for i, entry in enumerate(self.layers):
            if entry is not None and entry[0].size(-2) > length:
                kept = (entry[0][..., :length, :], entry[1][..., :length, :])  # (B, H_kv, length, d_k)
                self.layers[i] = kept if length else None

    def extend(self, layer: int, k: torch.Tensor, v: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Append this step's k, v (B, H_kv, N, d_k); returns every position's (B, H_kv, P + N, d_k).

        A step writes into room kept after the cached positions (a quarter more, at least 64) instead of copying
        every cached position into a new tensor (at a cache of 1,000 tokens, 8 % of SmolLM2's step). Earlier
        returned tensors keep their values: they are views of positions never written again. An entry set from
        outside (``layers[i] = (k, v)``) is copied into new room when it is extended."""
        past, room = self.layers[layer], self._room[layer]
        if past is None:
            self.layers[layer] = (k, v)  # a first pass keeps its own tensors: no room until a step asks for it
            return k, v
        P, N = past[0].size(-2), k.size(-2)
        ours = room is not None and past is self._mine[layer] and past[0].shape[:-2] == k.shape[:-2]
        if not ours or room[0].size(-2) < P + N:
            size = P + N + max(64, (P + N) // 4)
            room = tuple(t.new_empty((*t.shape[:-2], size, t.size(-1))) for t in (k, v))  # (B, H_kv, size, d_k)
            for r, t in zip(room, past):
                r[..., :P, :] = t
            self._room[layer] = room
        for r, t in zip(room, (k, v)):
            r[..., P : P + N, :] = t
        self.layers[layer] = self._mine[layer] = (
            room[0][..., : P + N, :],
            room[1][..., : P + N, :],
        )  # (B, H_kv, P + N, d_k)
        return self.layers[layer]
