"""A model folder uploaded as one .zip (a ``save_pretrained`` folder, or the post's weights with their
tokenizer.json): unpacked into a temporary folder with every member checked first — no absolute paths, no
``..``, no links, a bounded count and unpacked size — then loaded from there and the folder removed."""

from __future__ import annotations

import contextlib
import io
import stat
import tempfile
import zipfile
from collections.abc import Iterator
from pathlib import Path, PurePosixPath

from model.errors import CheckpointError

MAX_MEMBERS = 2_000
MAX_UNPACKED = 2 * 1024**3  # 2 GB: a zip bomb stops here, before anything is written


@contextlib.contextmanager
def unpacked(data: bytes) -> Iterator[Path]:
    """The folder holding config.json (or the only folder) of a zip archive, for the length of the block."""
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
    except (zipfile.BadZipFile, OSError):
        raise CheckpointError("this .zip cannot be read: it is damaged, cut short or not a zip archive") from None
    with archive, tempfile.TemporaryDirectory(prefix="attention-lab-") as tmp:
        members = archive.infolist()
        if len(members) > MAX_MEMBERS:
            raise CheckpointError(f"the .zip holds {len(members):,} entries; a model folder has far fewer")
        if sum(m.file_size for m in members) > MAX_UNPACKED:
            raise CheckpointError(f"the .zip unpacks to more than {MAX_UNPACKED // 1024**3} GB")
        for m in members:
            path = PurePosixPath(m.filename)
            if path.is_absolute() or ".." in path.parts or "\\" in m.filename or stat.S_ISLNK(m.external_attr >> 16):
                raise CheckpointError(f"the .zip entry {m.filename!r} points outside its folder; it is not unpacked")
        archive.extractall(tmp)
        root = Path(tmp)
        configs = sorted(p.parent for p in root.rglob("config.json"))
        folders = [p for p in root.iterdir() if p.is_dir() and not p.name.startswith(("__MACOSX", "."))]
        if configs:
            yield configs[0]
        elif len(folders) == 1 and not any(p.is_file() for p in root.iterdir()):
            yield folders[0]
        else:
            yield root
