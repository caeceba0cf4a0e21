"""DistilBERT folders (``model_type: distilbert``): BERT's post-norm encoder without token types, its projections
named q_lin/k_lin/v_lin/out_lin and its norms sa_layer_norm/output_layer_norm; in a DistilBertForMaskedLM its head
(``vocab_transform``, the config's activation, ``vocab_layer_norm``, ``vocab_projector`` tied to the embeddings unless
the file holds its own)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from model.config import TransformerConfig
from model.io.families.common import Folder, MLMNames, activation, config, family_loader, need, rename, take_mlm

ANCHOR = "embeddings.word_embeddings.weight"
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
MLM = MLMNames("vocab_transform", "vocab_layer_norm", "vocab_projector")


def distilbert_config(raw: Mapping[str, Any], **overrides: Any) -> TransformerConfig:
    pad = raw.get("pad_token_id")
    act = activation(raw.get("activation", "gelu"))
    return config(
        vocab_size=need(raw, "vocab_size"),
        d_model=need(raw, "dim"),
        n_heads=need(raw, "n_heads"),
        n_layers=need(raw, "n_layers"),
        d_ff=need(raw, "hidden_dim"),
        max_seq_len=need(raw, "max_position_embeddings"),
        norm="post",
        positional="learned",
        activation=act,
        bias=True,
        ff_bias=True,
        layer_norm_eps=1e-12,  # DistilBERT's nn.LayerNorm(dim, eps=1e-12) everywhere, its MLM head's too
        scale_embeddings=False,
        embedding_layer_norm=True,
        final_layer_norm=False,
        pad_token_id=pad if isinstance(pad, int) else 0,
        mlm_activation=act,
        **overrides,
    )


def _distilbert(src: Folder):
    head, own = {}, False
    if f"{MLM.dense}.weight" in src.ledger:
        head, own = take_mlm(src, MLM, ANCHOR, need(src.raw, "dim"))
    cfg = distilbert_config(src.raw, mlm_head=bool(head), tie_mlm_head=not own)
    state = rename(src.ledger, cfg.n_layers, EMBED_MAP, LAYER_MAP, "transformer.layer.{i}.")
    mlm = "; its MLM head" if cfg.mlm_head else ""
    return cfg, {**state, **head}, f"DistilBERT (BERT's post-norm encoder, no token types{mlm})"


load = family_loader(ANCHOR, "distilbert.", _distilbert, distilbert_config)
