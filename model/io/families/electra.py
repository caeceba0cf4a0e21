"""ELECTRA folders (``model_type: electra``): BERT's post-norm encoder under the name ``electra.`` — the
discriminator (its replaced-token-detection head is named and left out: no page reads it) or the generator with its
MLM head (``generator_predictions``: dense, exact GELU, LayerNorm; ``generator_lm_head`` tied to the embeddings unless
the file holds its own). Embeddings narrower than the encoder (``embedding_size`` < hidden_size, as ELECTRA-small's
128 under 256) are summed and normalised at their own width and lifted by ``embeddings_project``; the generator's
head narrows back to that width before the vocabulary."""

from __future__ import annotations

from model.errors import CheckpointError
from model.io.families.bert import ANCHOR, bert_config, encoder
from model.io.families.common import Folder, MLMNames, family_loader, need

MLM = MLMNames("generator_predictions.dense", "generator_predictions.LayerNorm", "generator_lm_head")


def embedding_size(raw) -> int:
    """0 when the embeddings are as wide as the encoder, else their width (a positive integer)."""
    hidden = need(raw, "hidden_size")
    e = raw.get("embedding_size", hidden)
    if isinstance(e, bool) or not isinstance(e, int) or e < 1:
        raise CheckpointError(f"config.json's 'embedding_size' must be a positive integer, got {e!r}")
    return 0 if e == hidden else e


def _check(raw) -> None:
    embedding_size(raw)
    bert_config(raw)


def _electra(src: Folder):
    e = embedding_size(src.raw)
    narrow = {"embedding_size": e} if e else {}
    cfg, state = encoder(src, MLM, mlm_activation="gelu", **narrow)
    if e:
        for part in ("weight", "bias"):
            state[f"emb_proj.{part}"] = src.ledger.take(f"embeddings_project.{part}")
    elif "embeddings_project.weight" in src.ledger:
        raise CheckpointError("the file has an embeddings_project, but config.json's embedding_size is hidden_size")
    kind = "generator, with its MLM head" if cfg.mlm_head else "discriminator"
    width = f"; {e}-wide embeddings projected to {cfg.d_model}" if e else ""
    return cfg, state, f"ELECTRA {kind} (BERT's post-norm encoder{width})"


load = family_loader(ANCHOR, "electra.", _electra, _check)
