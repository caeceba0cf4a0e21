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
from model.io.budget import BOMB_BYTES, MAX_RATIO, limit_for, too_large

MAX_MEMBERS = 2_000
MAX_UNPACKED = 2 * 1024**3  # 2 GB: a zip bomb stops here, before anything is written
CHUNK = 1024 * 1024


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
            _check_budget(m)
        for m in members:
            _extract(archive, m, Path(tmp))
        root = Path(tmp)
        configs = sorted(p.parent for p in root.rglob("config.json"))
        folders = [p for p in root.iterdir() if p.is_dir() and not p.name.startswith(("__MACOSX", "."))]
        if configs:
            yield configs[0]
        elif len(folders) == 1 and not any(p.is_file() for p in root.iterdir()):
            yield folders[0]
        else:
            yield root


def _check_budget(member: zipfile.ZipInfo) -> None:
    """Refuse a member before anything is unpacked: a JSON or vocabulary file larger than its kind's budget, or
    anything that unpacks to more than BOMB_BYTES at over MAX_RATIO times its packed size (a bomb: real weights
    hardly compress, text about 10 ×)."""
    name = PurePosixPath(member.filename).name
    limit = limit_for(name)
    if limit is not None and member.file_size > limit:
        raise CheckpointError(too_large(f"the .zip's {name}", member.file_size, limit))
    if member.file_size > BOMB_BYTES and member.file_size > MAX_RATIO * max(member.compress_size, 1):
        raise CheckpointError(
            f"the .zip's {name} unpacks to {member.file_size / 2**20:,.0f} MB from "
            f"{member.compress_size / 2**20:,.1f} MB: no model file compresses {MAX_RATIO} times; it is not unpacked"
        )


def _extract(archive: zipfile.ZipFile, member: zipfile.ZipInfo, root: Path) -> None:
    """Unpack one member in chunks, never more bytes than its declared size (zipfile stops there; a member whose
    data runs short or fails its CRC is refused)."""
    target = root / PurePosixPath(member.filename)
    if member.is_dir():
        target.mkdir(parents=True, exist_ok=True)
        return
    target.parent.mkdir(parents=True, exist_ok=True)
    written = 0
    try:
        with archive.open(member) as src, target.open("wb") as dst:
            while chunk := src.read(CHUNK):
                written += len(chunk)
                if written > member.file_size:  # cannot happen with zipfile's own bound; kept as the invariant
                    raise CheckpointError(f"the .zip's {member.filename!r} unpacks past its declared size")
                dst.write(chunk)
    except (zipfile.BadZipFile, EOFError, OSError, NotImplementedError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else type(exc).__name__
        raise CheckpointError(f"the .zip's {member.filename!r} cannot be unpacked ({reason})") from None
