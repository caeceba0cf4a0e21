"""ELECTRA folders (``model_type: electra``): BERT's post-norm encoder under the name ``electra.`` — the
discriminator (its replaced-token-detection head is named and left out: no page reads it) or the generator with its
MLM head (``generator_predictions``: dense, exact GELU, LayerNorm; ``generator_lm_head`` tied to the embeddings unless
the file holds its own). An embedding narrower than the encoder (``embedding_size`` < hidden_size, with its
``embeddings_project``) is refused by name: the from-scratch stack has no such projection yet."""

from __future__ import annotations

from model.errors import CheckpointError
from model.io.families.bert import ANCHOR, bert_config, encoder
from model.io.families.common import Folder, MLMNames, family_loader

MLM = MLMNames("generator_predictions.dense", "generator_predictions.LayerNorm", "generator_lm_head")


def _check(raw) -> None:
    hidden = raw.get("hidden_size")
    if raw.get("embedding_size", hidden) != hidden:
        raise CheckpointError(
            f"this ELECTRA has {raw.get('embedding_size')}-wide embeddings projected to hidden_size {hidden} "
            "(embeddings_project); only ELECTRAs whose embedding_size equals hidden_size load for now"
        )
    bert_config(raw)


def _electra(src: Folder):
    cfg, state = encoder(src, MLM, mlm_activation="gelu")
    kind = "generator, with its MLM head" if cfg.mlm_head else "discriminator"
    return cfg, state, f"ELECTRA {kind} (BERT's post-norm encoder)"


load = family_loader(ANCHOR, "electra.", _electra, _check)
