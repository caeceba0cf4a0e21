"""Which local paths the sidebar's "Local folder or file path" source may open.

On a shared server a path box is a window onto the server's disk: it would open any file the server can read and
tell a student whether ``/etc/…`` exists. So it opens only what lies inside the folders named in
``ATTENTION_LAB_MODEL_DIRS`` (separated by ``os.pathsep``), by default the working directory when the server
listens on this machine only and nothing when it listens on other addresses. Every path outside — existing or
not, a link that leads out, ``..`` — gets the same sentence. No Streamlit here: the caller passes the address.
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Mapping
from pathlib import Path, PurePath

ENV = "ATTENTION_LAB_MODEL_DIRS"
LOCAL_ADDRESSES = frozenset({"localhost", "127.0.0.1", "::1"})
REFUSED = (
    "This path is outside the folders this server shares (ATTENTION_LAB_MODEL_DIRS). Upload the file, or start the "
    "server with its folder shared:"
)
SWITCHED_OFF = (
    "Local paths are switched off on this server (it listens on the network and ATTENTION_LAB_MODEL_DIRS names no "
    "folder). Upload the file instead, or start the server with the folder of your models shared:"
)
#: a typed path whose last part looks like a weights or tokenizer file: its folder is what to share
FILE_SUFFIXES = (".safetensors", ".pt", ".pth", ".bin", ".gguf", ".json", ".zip", ".model", ".txt")


def share_command(text: str) -> str:
    """The one line that starts this app with the folder of ``text`` shared. Built from the typed text alone — never
    from the disk — so it says the same whether the path exists or not."""
    typed = text.strip().replace("\0", "")
    path = PurePath(typed or "/path/to/models")
    folder = path.parent if path.suffix.lower() in FILE_SUFFIXES else path
    return f"ATTENTION_LAB_MODEL_DIRS={shlex.quote(str(folder))} streamlit run app.py"


def model_dirs(address: str | None, env: Mapping[str, str] | None = None) -> list[Path]:
    """The folders local paths may open: ATTENTION_LAB_MODEL_DIRS when set (empty: none), else the working
    directory when ``address`` (Streamlit's server.address) is this machine only, else none."""
    env = os.environ if env is None else env
    raw = env.get(ENV)
    if raw is not None:
        return [Path(p).expanduser().resolve() for p in raw.split(os.pathsep) if p.strip()]
    return [Path.cwd().resolve()] if (address or "").strip() in LOCAL_ADDRESSES else []


def allowed(text: str, roots: list[Path]) -> Path | None:
    """The resolved path (links followed, relative to the working directory) when it lies inside one of
    ``roots``, else None."""
    if not text.strip() or "\0" in text:
        return None
    try:
        path = Path(text.strip()).expanduser()
        path = (path if path.is_absolute() else Path.cwd() / path).resolve()
    except (OSError, RuntimeError, ValueError):
        return None
    return path if any(path == root or root in path.parents for root in roots) else None
