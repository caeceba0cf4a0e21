"""One importer per Hugging Face model family, chosen by config.json's ``model_type``: each module holds the
config translation, the name map and any weight surgery, nothing else (as TransformerLens keeps its weight
conversions). A family not listed is refused by name, with the list of those that are."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from model.errors import CheckpointError
from model.io.families import (
    albert,
    bart,
    bert,
    deberta_v2,
    distilbert,
    electra,
    gemma2,
    gemma3,
    gpt2,
    gpt_neox,
    gpt_oss,
    granite,
    llama,
    mistral,
    mixtral,
    modernbert,
    mpnet,
    olmo2,
    phi3,
    qwen2,
    qwen3,
    qwen3_moe,
    roberta,
    smollm3,
    t5,
)
from model.io.state import LoadedModel

FAMILIES: dict[str, Callable[[Path, Mapping[str, Any]], LoadedModel]] = {
    "bert": bert.load,
    "roberta": roberta.load,
    "xlm-roberta": roberta.load,
    "distilbert": distilbert.load,
    "electra": electra.load,
    "albert": albert.load,
    "mpnet": mpnet.load,
    "deberta-v2": deberta_v2.load,
    "modernbert": modernbert.load,
    "gpt2": gpt2.load,
    "gpt_neox": gpt_neox.load,
    "llama": llama.load,
    "mistral": mistral.load,
    "qwen2": qwen2.load,
    "qwen3": qwen3.load,
    "phi3": phi3.load,
    "gemma3_text": gemma3.load,
    "gemma2": gemma2.load,
    "smollm3": smollm3.load,
    "olmo2": olmo2.load,
    "granite": granite.load,
    "mixtral": mixtral.load,
    "qwen3_moe": qwen3_moe.load,
    "gpt_oss": gpt_oss.load,
    "t5": t5.load,
    "bart": bart.load,
    "mbart": bart.load,
}


def load_hf_folder(folder: Path, raw: Mapping[str, Any]) -> LoadedModel:
    """Import a ``save_pretrained`` folder whose config.json names its ``model_type``."""
    kind = raw.get("model_type")
    if kind not in FAMILIES:
        arch = raw.get("architectures")
        named = f" ({', '.join(map(str, arch))})" if isinstance(arch, list) and arch else ""
        raise CheckpointError(
            f"config.json says this is a {kind!r} model{named}; Attention Lab does not carry that family yet. "
            f"Supported Hugging Face families: {', '.join(FAMILIES)}"
        )
    return FAMILIES[kind](folder, raw)
