"""BERT folders (``model_type: bert``), and the base of RoBERTa, XLM-R and ELECTRA: a post-norm encoder with learned
absolute positions, token-type embeddings, an embedding LayerNorm, biases everywhere and exact GELU, and — in a
BertForMaskedLM — its masked-language-model head (``cls.predictions``: dense, activation, LayerNorm, the vocabulary
matrix tied to the embeddings unless the file holds its own, a bias per token). A BertModel, a BertForMaskedLM, a
TensorFlow-era file (LayerNorm ``gamma``/``beta``) and a training script's wrapped state dict read alike."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch

from model.config import TransformerConfig
from model.errors import CheckpointError
from model.io.families.common import Folder, MLMNames, activation, config, family_loader, need, rename, take_mlm

ANCHOR = "embeddings.word_embeddings.weight"
# HF name (below "encoder.layer.{i}.") -> ours (below "blocks.{i}.")
LAYER_MAP = {
    "attention.self.query": "attn.w_q",
    "attention.self.key": "attn.w_k",
    "attention.self.value": "attn.w_v",
    "attention.output.dense": "attn.w_o",
    "attention.output.LayerNorm": "ln1",
    "intermediate.dense": "ff.fc1",
    "output.dense": "ff.fc2",
    "output.LayerNorm": "ln2",
}
EMBED_MAP = {
    "embeddings.word_embeddings.weight": "tok_emb.weight",
    "embeddings.position_embeddings.weight": "pos_enc.embedding.weight",
    "embeddings.token_type_embeddings.weight": "type_emb.weight",
    "embeddings.LayerNorm.weight": "emb_ln.weight",
    "embeddings.LayerNorm.bias": "emb_ln.bias",
}
MLM = MLMNames(
    "cls.predictions.transform.dense",
    "cls.predictions.transform.LayerNorm",
    "cls.predictions.decoder",
    "cls.predictions.bias",
)


def bert_config(raw: Mapping[str, Any], **overrides: Any) -> TransformerConfig:
    """Translate a Hugging Face BERT config.json into a :class:`TransformerConfig`."""
    if raw.get("position_embedding_type", "absolute") != "absolute":
        raise CheckpointError("only absolute position embeddings are supported")
    act = activation(raw.get("hidden_act", "gelu"))
    pad = raw.get("pad_token_id", 0)
    fields = dict(
        vocab_size=need(raw, "vocab_size"),
        d_model=need(raw, "hidden_size"),
        n_heads=need(raw, "num_attention_heads"),
        n_layers=need(raw, "num_hidden_layers"),
        d_ff=need(raw, "intermediate_size"),
        max_seq_len=raw.get("max_position_embeddings", 512),
        norm="post",
        positional="learned",
        activation=act,
        mlm_activation=act,
        bias=True,
        ff_bias=True,
        layer_norm_eps=float(raw.get("layer_norm_eps", 1e-12)),
        scale_embeddings=False,
        n_token_types=raw.get("type_vocab_size", 2),
        embedding_layer_norm=True,
        final_layer_norm=False,
        pad_token_id=pad if isinstance(pad, int) and not isinstance(pad, bool) else 0,
    )
    return config(**{**fields, **overrides})


def encoder(src: Folder, mlm: MLMNames, **overrides: Any) -> tuple[TransformerConfig, dict[str, torch.Tensor]]:
    """The config and weights of BERT's encoder in ``src`` (overrides: a family's differences), with its MLM head when
    the file holds one."""
    head: dict[str, torch.Tensor] = {}
    own = False
    if f"{mlm.dense}.weight" in src.ledger:
        e = overrides.get("embedding_size") or need(src.raw, "hidden_size")  # the head narrows to the embeddings
        head, own = take_mlm(src, mlm, ANCHOR, e)
    cfg = bert_config(src.raw, mlm_head=bool(head), tie_mlm_head=not own, **overrides)
    state = rename(src.ledger, cfg.n_layers, EMBED_MAP, LAYER_MAP, "encoder.layer.{i}.")
    return cfg, {**state, **head}


def _bert(src: Folder):
    cfg, state = encoder(src, MLM)
    head = "; its MLM head" if cfg.mlm_head else ""
    return cfg, state, f"BERT (post-norm encoder, learned positions, token types{head})"


load = family_loader(ANCHOR, "bert.", _bert, bert_config)
