"""RoBERTa and XLM-RoBERTa folders (``model_type: roberta`` / ``xlm-roberta``): BERT's post-norm encoder whose
learned positions are numbered from padding_idx + 1 (fairseq's convention), so the first
pad_token_id + 1 rows of the table are never read; one token type."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from model.io.bert import bert_config, map_bert_weights
from model.io.families.common import build, config, need
from model.io.state import LoadedModel


def load(folder: Path, raw: Mapping[str, Any]) -> LoadedModel:
    pad = need(raw, "pad_token_id")
    offset = pad + 1
    base = {k: v for k, v in bert_config(raw).to_dict().items() if k != "dropout"}
    max_len = need(raw, "max_position_embeddings") - offset
    cfg = config(**{**base, "max_seq_len": max_len, "position_offset": offset, "pad_token_id": pad})

    def rename(hf, cfg):
        return map_bert_weights(hf, cfg.n_layers, prefix="roberta.")

    kind = "XLM-RoBERTa" if raw.get("model_type") == "xlm-roberta" else "RoBERTa"
    return build(folder, raw, cfg, rename, f"{kind} (BERT's post-norm encoder, positions from {offset})")
