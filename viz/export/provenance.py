"""Where a figure comes from, in words a reader of the file can check: the model, the text, the view and its
selection (layer, head, tokens in focus…), the options that change the numbers, the app's version, the time."""

from __future__ import annotations

import datetime as dt
import tomllib
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


@cache
def app_version() -> str:
    """The project's version (pyproject.toml), with the git commit when the checkout has one ("0.1.0+a1b2c3d")."""
    try:
        version = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["version"]
    except (OSError, KeyError, tomllib.TOMLDecodeError):
        version = "unknown"
    commit = _commit(ROOT / ".git")
    return f"{version}+{commit[:7]}" if commit else version


def _commit(git: Path) -> str:
    try:
        head = (git / "HEAD").read_text(encoding="ascii").strip()
        if not head.startswith("ref: "):
            return head
        ref = head[5:]
        if (git / ref).exists():
            return (git / ref).read_text(encoding="ascii").strip()
        for line in (git / "packed-refs").read_text(encoding="ascii").splitlines():
            if line.endswith(" " + ref):
                return line.split()[0]
    except (OSError, UnicodeDecodeError):
        pass
    return ""


def provenance(view, *, model: str, text: str, options: dict | None = None) -> dict:
    """The provenance of one view (a :class:`viz.views.base.View`) as plain JSON-able data."""
    selection = {k: list(v) if isinstance(v, tuple) else v for k, v in (view.selection or {}).items()}
    return {
        "figure": view.title,
        "view": view.key,
        "selection": selection,
        "model": model,
        "text": text,
        **({"options": options} if options else {}),
        "app": "Attention Lab",
        "app version": app_version(),
        "exported": dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC"),
    }


def provenance_line(record: dict) -> str:
    """One readable line: "all-MiniLM-L6-v2 · view attention (layer 3, head 1) · Attention Lab 0.1.0+…"."""
    chosen = ", ".join(f"{k} {v}" for k, v in record.get("selection", {}).items() if v not in (-1, "", (), []))
    return " · ".join(
        part
        for part in (
            record.get("model", ""),
            f"view {record.get('view', '')}" + (f" ({chosen})" if chosen else ""),
            f"Attention Lab {record.get('app version', '')}",
            record.get("exported", ""),
        )
        if part
    )
