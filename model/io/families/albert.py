"""ALBERT folders (``model_type: albert``): BERT's post-norm encoder with its two savings — factorised embeddings
(``embedding_size`` wide, normalised there, lifted to hidden_size by ``embedding_hidden_mapping_in``) and one layer
whose weights every layer shares (``shared_layers``: the block runs num_hidden_layers times, each pass captured as
its own layer). An AlbertForMaskedLM's head (``predictions``: dense to the embedding width, activation, LayerNorm, the
vocabulary matrix tied to the embeddings) is read. Several layer groups or several layers per group are refused by
name (no released ALBERT has them)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch

from model.errors import CheckpointError
from model.io.families.bert import ANCHOR, EMBED_MAP, bert_config
from model.io.families.common import Folder, MLMNames, family_loader, need, rename, take_mlm

MLM = MLMNames("predictions.dense", "predictions.LayerNorm", "predictions.decoder", "predictions.bias")
LAYER = "encoder.albert_layer_groups.0.albert_layers.0."
LAYER_MAP = {
    "attention.query": "attn.w_q",
    "attention.key": "attn.w_k",
    "attention.value": "attn.w_v",
    "attention.dense": "attn.w_o",
    "attention.LayerNorm": "ln1",
    "ffn": "ff.fc1",
    "ffn_output": "ff.fc2",
    "full_layer_layer_norm": "ln2",
}


def _fields(raw: Mapping[str, Any]) -> dict[str, Any]:
    for key in ("num_hidden_groups", "inner_group_num"):
        if raw.get(key, 1) != 1:
            raise CheckpointError(f"this ALBERT has {key} = {raw.get(key)!r}; only one shared layer (1) is supported")
    e = need(raw, "embedding_size")
    if e < 1:
        raise CheckpointError(f"config.json's 'embedding_size' must be positive, got {e}")
    return {"shared_layers": True, "embedding_size": e}  # projected even when as wide as hidden_size


def _check(raw: Mapping[str, Any]) -> None:
    bert_config(raw, **_fields(raw))


def _albert(src: Folder):
    fields = _fields(src.raw)
    head: dict[str, torch.Tensor] = {}
    if f"{MLM.dense}.weight" in src.ledger:
        head, own = take_mlm(src, MLM, ANCHOR, fields["embedding_size"])
        fields.update(mlm_head=True, tie_mlm_head=not own)
    cfg = bert_config(src.raw, **fields)
    state = rename(src.ledger, 1, EMBED_MAP, LAYER_MAP, LAYER)
    one = {k.removeprefix("blocks.0."): v for k, v in state.items() if k.startswith("blocks.0.")}
    for i in range(1, cfg.n_layers):  # the same tensors under every layer's names (the model ties them)
        state.update({f"blocks.{i}.{k}": v for k, v in one.items()})
    for part in ("weight", "bias"):
        state[f"emb_proj.{part}"] = src.ledger.take(f"encoder.embedding_hidden_mapping_in.{part}")
    width = f"{cfg.embedding_size}-wide embeddings projected to {cfg.d_model}, "
    mlm = "; its MLM head" if cfg.mlm_head else ""
    return cfg, {**state, **head}, f"ALBERT ({width}one layer shared by all {cfg.n_layers}{mlm})"


load = family_loader(ANCHOR, "albert.", _albert, _check)
