"""RoBERTa and XLM-RoBERTa folders (``model_type: roberta`` / ``xlm-roberta``): BERT's post-norm encoder whose
learned positions are numbered from padding_idx + 1 (fairseq's convention), so the first pad_token_id + 1 rows of the
table are never read; one token type; in a RobertaForMaskedLM the head ``lm_head`` (dense, exact GELU, LayerNorm, the
vocabulary matrix tied to the embeddings unless the file holds its own, a bias per token)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from model.io.families.bert import ANCHOR, bert_config, encoder
from model.io.families.common import Folder, MLMNames, family_loader, need

MLM = MLMNames("lm_head.dense", "lm_head.layer_norm", "lm_head.decoder", "lm_head.bias")


def overrides(raw: Mapping[str, Any]) -> dict[str, Any]:
    """RoBERTa's differences from BERT's config: positions from pad + 1, an exact-GELU MLM head."""
    pad = need(raw, "pad_token_id")
    offset = pad + 1
    max_len = need(raw, "max_position_embeddings") - offset
    return dict(max_seq_len=max_len, position_offset=offset, pad_token_id=pad, mlm_activation="gelu")


def _roberta(src: Folder):
    cfg, state = encoder(src, MLM, **overrides(src.raw))
    offset = cfg.position_offset
    kind = "XLM-RoBERTa" if src.raw.get("model_type") == "xlm-roberta" else "RoBERTa"
    head = "; its MLM head" if cfg.mlm_head else ""
    return cfg, state, f"{kind} (BERT's post-norm encoder, positions from {offset}{head})"


load = family_loader(ANCHOR, "roberta.", _roberta, lambda raw: bert_config(raw, **overrides(raw)))
