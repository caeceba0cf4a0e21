"""DeBERTa-v2 and -v3 folders (``model_type: deberta-v2``): BERT's post-norm encoder whose attention is
disentangled — position enters every layer's scores as a content→position and a position→content term read from one
table of relative embeddings (``encoder.rel_embeddings``, normalised by ``encoder.LayerNorm`` when ``norm_rel_ebd``
says so), with distances log-bucketed beyond ``position_buckets`` / 2 and scores scaled by 1/√(d_k · (1 + terms)).
The terms go through the layer's own query and key projections (``share_att_key``, v3) or projections of their own
(``pos_query_proj``, ``pos_key_proj``). v3 adds no absolute position to the embeddings (``position_biased_input``
false) and has no token types. A DebertaV2ForMaskedLM's head is read in either of transformers' forms (``cls.
predictions``, legacy; ``lm_predictions.lm_head``), both tied to the embeddings. transformers computes neither the
paper's enhanced mask decoder nor a convolution layer: a ``mask_predictions`` head is named and left out, a
``conv_kernel_size`` refused."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch

from model.errors import CheckpointError
from model.io.families.bert import ANCHOR, EMBED_MAP
from model.io.families.common import Folder, MLMNames, activation, config, family_loader, need, rename, take_mlm

LEGACY = MLMNames("cls.predictions.transform.dense", "cls.predictions.transform.LayerNorm", "cls.predictions.decoder",
                  "cls.predictions.bias")  # fmt: skip
HEAD = MLMNames("lm_predictions.lm_head.dense", "lm_predictions.lm_head.LayerNorm", "lm_predictions.lm_head.decoder",
                "lm_predictions.lm_head.bias")  # fmt: skip
LAYER_MAP = {
    "attention.self.query_proj": "attn.w_q",
    "attention.self.key_proj": "attn.w_k",
    "attention.self.value_proj": "attn.w_v",
    "attention.self.pos_key_proj": "attn.pos_k",
    "attention.self.pos_query_proj": "attn.pos_q",
    "attention.output.dense": "attn.w_o",
    "attention.output.LayerNorm": "ln1",
    "intermediate.dense": "ff.fc1",
    "output.dense": "ff.fc2",
    "output.LayerNorm": "ln2",
}


def terms(raw: Mapping[str, Any]) -> tuple[str, ...]:
    """pos_att_type as a tuple ("p2c|c2p" in older configs, a list in newer ones)."""
    kinds = raw.get("pos_att_type") or ()
    kinds = kinds.split("|") if isinstance(kinds, str) else kinds
    if not isinstance(kinds, list | tuple) or set(kinds) - {"c2p", "p2c"}:
        raise CheckpointError(f"unsupported pos_att_type {raw.get('pos_att_type')!r} (c2p and p2c are computed)")
    return tuple(k.strip() for k in kinds)


def deberta_config(raw: Mapping[str, Any], **overrides: Any):
    d, heads = need(raw, "hidden_size"), need(raw, "num_attention_heads")
    if raw.get("conv_kernel_size", 0):
        raise CheckpointError("this DeBERTa has a convolution layer (conv_kernel_size): not supported yet")
    if raw.get("embedding_size", d) != d:
        raise CheckpointError("this DeBERTa's embeddings are narrower than its encoder (embed_proj): not supported yet")
    if raw.get("attention_head_size", d // heads) != d // heads:
        raise CheckpointError("this DeBERTa's heads do not tile hidden_size (attention_head_size): not supported yet")
    kinds = terms(raw)
    relative = raw.get("relative_attention", False) is True
    max_pos = need(raw, "max_position_embeddings")
    max_rel = raw.get("max_relative_positions", -1)
    max_rel = max_rel if isinstance(max_rel, int) and max_rel >= 1 else max_pos
    buckets = raw.get("position_buckets", -1)
    buckets = buckets if isinstance(buckets, int) and buckets > 0 else 0
    norms = [x.strip() for x in str(raw.get("norm_rel_ebd", "none")).lower().split("|")]
    pad = raw.get("pad_token_id", 0)
    act = activation(raw.get("hidden_act", "gelu"))
    fields = dict(
        vocab_size=need(raw, "vocab_size"),
        d_model=d,
        n_heads=heads,
        n_layers=need(raw, "num_hidden_layers"),
        d_ff=need(raw, "intermediate_size"),
        max_seq_len=max_pos,
        norm="post",
        positional="learned" if raw.get("position_biased_input", True) is not False else "none",
        activation=act,
        mlm_activation=act,
        bias=True,
        layer_norm_eps=float(raw.get("layer_norm_eps", 1e-7)),
        scale_embeddings=False,
        n_token_types=raw.get("type_vocab_size", 0),
        embedding_layer_norm=True,
        final_layer_norm=False,
        pad_token_id=pad if isinstance(pad, int) and not isinstance(pad, bool) else 0,
        attn_scale=(d // heads * (1 + len(kinds))) ** -0.5,  # transformers counts the terms even without them
        disentangled=kinds if relative else (),
        rel_span=(buckets or max_rel) if relative else 0,
        rel_log_buckets=buckets,
        rel_log_max=max_rel if buckets else 0,
        share_att_key=raw.get("share_att_key", False) is True,
        rel_norm=relative and "layer_norm" in norms,
    )
    return config(**{**fields, **overrides})


def _deberta(src: Folder):
    head: dict[str, torch.Tensor] = {}
    fields: dict[str, Any] = {}
    for names in (LEGACY, HEAD):
        if f"{names.dense}.weight" in src.ledger:
            head, own = take_mlm(src, names, ANCHOR, need(src.raw, "hidden_size"))
            fields.update(mlm_head=True, tie_mlm_head=not own)
            break
    cfg = deberta_config(src.raw, **fields)
    state = rename(src.ledger, cfg.n_layers, EMBED_MAP, LAYER_MAP, "encoder.layer.{i}.")
    if cfg.disentangled:
        state["rel_pos.embedding.weight"] = src.ledger.take("encoder.rel_embeddings.weight")
        if cfg.rel_norm:
            for part in ("weight", "bias"):
                state[f"rel_pos.ln.{part}"] = src.ledger.take(f"encoder.LayerNorm.{part}")
    for name in src.ledger.pending():
        if name.startswith("mask_predictions."):
            src.ledger.mark_left_out(name, "the enhanced mask decoder's head, which transformers does not compute")
    version = "v3-style: relative positions only" if cfg.positional == "none" else "absolute and relative positions"
    what = " and ".join({"c2p": "content→position", "p2c": "position→content"}[t] for t in cfg.disentangled)
    mlm = "; its MLM head" if cfg.mlm_head else ""
    return cfg, {**state, **head}, f"DeBERTa-v2 (disentangled attention: content→content and {what}; {version}{mlm})"


load = family_loader(ANCHOR, "deberta.", _deberta, deberta_config)
