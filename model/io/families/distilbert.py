"""DistilBERT folders (``model_type: distilbert``): BERT's post-norm encoder without token types, its
projections named q_lin/k_lin/v_lin/out_lin and its norms sa_layer_norm/output_layer_norm."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import torch

from model.config import TransformerConfig
from model.io.families.common import activation, build, config, leftovers, need, rename
from model.io.state import LoadedModel

# HF name (below "transformer.layer.{i}.") -> ours (below "blocks.{i}.")
LAYER_MAP = {
    "attention.q_lin": "attn.w_q",
    "attention.k_lin": "attn.w_k",
    "attention.v_lin": "attn.w_v",
    "attention.out_lin": "attn.w_o",
    "sa_layer_norm": "ln1",
    "ffn.lin1": "ff.fc1",
    "ffn.lin2": "ff.fc2",
    "output_layer_norm": "ln2",
}
EMBED_MAP = {
    "embeddings.word_embeddings.weight": "tok_emb.weight",
    "embeddings.position_embeddings.weight": "pos_enc.embedding.weight",  # sinusoidal_pos_embds: stored too
    "embeddings.LayerNorm.weight": "emb_ln.weight",
    "embeddings.LayerNorm.bias": "emb_ln.bias",
}


def distilbert_config(raw: Mapping[str, Any]) -> TransformerConfig:
    pad = raw.get("pad_token_id")
    return config(
        vocab_size=need(raw, "vocab_size"),
        d_model=need(raw, "dim"),
        n_heads=need(raw, "n_heads"),
        n_layers=need(raw, "n_layers"),
        d_ff=need(raw, "hidden_dim"),
        max_seq_len=need(raw, "max_position_embeddings"),
        norm="post",
        positional="learned",
        activation=activation(raw.get("activation", "gelu")),
        bias=True,
        ff_bias=True,
        layer_norm_eps=1e-12,  # DistilBERT's nn.LayerNorm(dim, eps=1e-12) everywhere
        scale_embeddings=False,
        embedding_layer_norm=True,
        final_layer_norm=False,
        pad_token_id=pad if isinstance(pad, int) else 0,
    )


def map_distilbert_weights(hf: dict[str, torch.Tensor], cfg: TransformerConfig) -> dict[str, torch.Tensor]:
    hf = {k.removeprefix("distilbert."): v for k, v in hf.items()}
    out, used = rename(hf, cfg.n_layers, EMBED_MAP, LAYER_MAP, "transformer.layer.{i}.")
    heads = ("vocab_", "pre_classifier.", "classifier.", "qa_outputs.", "embeddings.position_ids")
    return {**out, **leftovers(hf, used, heads)}


def load(folder: Path, raw: Mapping[str, Any]) -> LoadedModel:
    cfg = distilbert_config(raw)
    return build(folder, raw, cfg, map_distilbert_weights, "DistilBERT (BERT's post-norm encoder, no token types)")
