"""The tiny Hugging Face folders in tests/fixtures/hf (made by scripts/make_hf_fixtures.py) and a way to upload one
as a single .zip."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "hf"


def zipped(folder: Path, top: str | None = None) -> bytes:
    """The folder's files as one zip archive, under ``top`` (default: the folder's name; "" for the root)."""
    top = f"{folder.name}/" if top is None else top
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for path in sorted(folder.iterdir()):
            zf.write(path, f"{top}{path.name}")
    return buf.getvalue()
