"""MPNet folders (``model_type: mpnet``; all-mpnet-base-v2 is one): BERT's post-norm encoder with two sources of
position — learned absolute positions numbered from 2 (padding_idx 1, fixed in MPNet's code whatever pad_token_id
says) and a relative-position bias (``encoder.relative_attention_bias``: 32 buckets × heads, bidirectional, log-spaced
to 128 tokens) added to every layer's scores after the 1/√d_k scaling, held once and shared by all layers. No token
types. An MPNetForMaskedLM's ``lm_head`` (dense, exact GELU, LayerNorm, tied vocabulary matrix, a bias per token) is
read."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch

from model.errors import CheckpointError
from model.io.families.bert import ANCHOR, EMBED_MAP, bert_config
from model.io.families.common import Folder, MLMNames, family_loader, need, rename, take_mlm

MLM = MLMNames("lm_head.dense", "lm_head.layer_norm", "lm_head.decoder", "lm_head.bias")
OFFSET = 2  # MPNetEmbeddings.padding_idx (1) + 1
LAYER_MAP = {
    "attention.attn.q": "attn.w_q",
    "attention.attn.k": "attn.w_k",
    "attention.attn.v": "attn.w_v",
    "attention.attn.o": "attn.w_o",
    "attention.LayerNorm": "ln1",
    "intermediate.dense": "ff.fc1",
    "output.dense": "ff.fc2",
    "output.LayerNorm": "ln2",
}


def _fields(raw: Mapping[str, Any]) -> dict[str, Any]:
    buckets = raw.get("relative_attention_num_buckets", 32)
    if buckets != 32:  # MPNet's compute_position_bias buckets into 32 whatever the table holds
        raise CheckpointError(f"relative_attention_num_buckets is {buckets!r}; MPNet's code reads 32 buckets")
    return dict(
        max_seq_len=need(raw, "max_position_embeddings") - OFFSET,
        position_offset=OFFSET,
        n_token_types=0,
        mlm_activation="gelu",
        relative_bias=True,
        rel_buckets=32,
        rel_max_distance=128,
    )


def _mpnet(src: Folder):
    fields = _fields(src.raw)
    head: dict[str, torch.Tensor] = {}
    if f"{MLM.dense}.weight" in src.ledger:
        head, own = take_mlm(src, MLM, ANCHOR, need(src.raw, "hidden_size"))
        fields.update(mlm_head=True, tie_mlm_head=not own)
    cfg = bert_config(src.raw, **fields)
    state = rename(src.ledger, cfg.n_layers, EMBED_MAP, LAYER_MAP, "encoder.layer.{i}.")
    state["rel_bias.embedding.weight"] = src.ledger.take("encoder.relative_attention_bias.weight")
    mlm = "; its MLM head" if cfg.mlm_head else ""
    return cfg, {**state, **head}, f"MPNet (post-norm encoder, learned positions and a relative-position bias{mlm})"


load = family_loader(ANCHOR, "mpnet.", _mpnet, lambda raw: bert_config(raw, **_fields(raw)))
