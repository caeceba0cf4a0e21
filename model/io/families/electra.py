"""ELECTRA folders (``model_type: electra``; the discriminator, or a generator's encoder): BERT's post-norm
encoder under the name ``electra.``. An embedding narrower than the encoder (``embedding_size`` < hidden_size,
with its ``embeddings_project``) is refused by name: the from-scratch stack has no such projection yet."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from model.errors import CheckpointError
from model.io.bert import bert_config, map_bert_weights
from model.io.families.common import build
from model.io.state import LoadedModel


def load(folder: Path, raw: Mapping[str, Any]) -> LoadedModel:
    hidden = raw.get("hidden_size")
    if raw.get("embedding_size", hidden) != hidden:
        raise CheckpointError(
            f"this ELECTRA has {raw.get('embedding_size')}-wide embeddings projected to hidden_size {hidden} "
            "(embeddings_project); only ELECTRAs whose embedding_size equals hidden_size load for now"
        )
    cfg = bert_config(raw)

    def rename(hf, cfg):
        return map_bert_weights(hf, cfg.n_layers, prefix="electra.")

    return build(folder, raw, cfg, rename, "ELECTRA (BERT's post-norm encoder)")
