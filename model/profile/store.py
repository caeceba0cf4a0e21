"""Profiles on disk: ``<root>/<model>__<corpus hash>/`` holding heads.parquet (one row per document, layer,
head), docs.parquet (doc, text, n_tokens) and meta.json. A profile is written into a hidden temporary folder and
renamed into place only when every file is complete, so a cancelled or crashed run never leaves a folder that
:func:`read_profile` would take for a finished one."""

from __future__ import annotations

import json
import os
import re
import shutil
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pandas (0.5 s to import) is loaded when a profile is made or read
    import pandas as pd

FORMAT = "attention-lab-profile/1"


@dataclass(frozen=True)
class Profile:
    heads: pd.DataFrame  # doc, layer, head, metric columns
    docs: pd.DataFrame  # doc, text, n_tokens
    meta: dict
    path: Path


def profile_dir(root: str | Path, model_key: str, corpus_key: str) -> Path:
    """Where the profile of ``model_key`` on the corpus ``corpus_key`` lives."""
    slug = re.sub(r"[^A-Za-z0-9._-]+", "-", model_key).strip("-")[:80] or "model"
    return Path(root) / f"{slug}__{corpus_key}"


def write_profile(path: Path, heads: pd.DataFrame, docs: pd.DataFrame, meta: dict) -> Path:
    """Write all three files into a temporary sibling folder, then rename it to ``path`` (replacing an older one)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.parent / f".tmp-{path.name}-{uuid.uuid4().hex[:8]}"
    tmp.mkdir()
    try:
        heads.to_parquet(tmp / "heads.parquet", index=False)
        docs.to_parquet(tmp / "docs.parquet", index=False)
        (tmp / "meta.json").write_text(json.dumps({**meta, "format": FORMAT, "written": time.time()}, indent=1))
        if path.exists():
            shutil.rmtree(path)
        os.replace(tmp, path)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    return path


def read_profile(path: str | Path) -> Profile | None:
    """The profile at ``path``, or None when there is no complete one there."""
    import pandas as pd

    path = Path(path)
    meta_file = path / "meta.json"
    if path.name.startswith(".tmp-") or not meta_file.is_file():
        return None
    try:
        meta = json.loads(meta_file.read_text())
    except (OSError, json.JSONDecodeError):
        return None
    if meta.get("format") != FORMAT or not all((path / f).is_file() for f in ("heads.parquet", "docs.parquet")):
        return None
    return Profile(pd.read_parquet(path / "heads.parquet"), pd.read_parquet(path / "docs.parquet"), meta, path)
