"""Session files: the saved settings (see :data:`viz.settings.SETTINGS`) as JSON, and a validated way back.

No Streamlit here.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping
from typing import Any

from model.io.budget import parse_json
from viz.export.deck import MAX_ITEMS, check_item
from viz.settings import BY_KEY, SETTINGS

FORMAT = "attention-lab-session/1"


def dump_session(state: Mapping[str, Any], page: str) -> str:
    """The saved settings found in ``state`` (a mapping such as st.session_state) as pretty JSON."""
    settings = {s.key: state[s.key] for s in SETTINGS if s.saved and s.key in state}
    data = {"format": FORMAT, "page": page, "settings": settings}
    if state.get("deck"):
        data["deck"] = list(state["deck"])  # the lecture deck: its figures as they were on screen
    return json.dumps(data, indent=2, ensure_ascii=False)


def load_session(text: str | bytes) -> tuple[dict, str | None, list[str]]:
    """Parse a session file. Returns (settings to apply, page url path, notes about what was skipped).

    Raises ValueError when the file is not a session file at all.
    """
    data = parse_json(text, "the session file", "session")  # its size, count and nesting before it is parsed
    if not isinstance(data, dict) or data.get("format") != FORMAT or not isinstance(data.get("settings"), dict):
        raise ValueError(f"not an Attention Lab session file (expected format {FORMAT!r})")
    settings, notes = {}, []
    for key, value in data["settings"].items():
        setting = BY_KEY.get(key)
        if setting is None or not setting.saved:
            notes.append(f"ignored unknown setting {key!r}")
            continue
        try:
            settings[key], note = setting.clean(value)
        except ValueError as exc:
            notes.append(str(exc))
            continue
        if note:
            notes.append(note)
    if isinstance(data.get("deck"), list):
        deck, seen = [], set()
        for item in data["deck"][:MAX_ITEMS]:
            try:
                clean = check_item(item)
            except ValueError as exc:
                notes.append(f"skipped a deck figure: {exc}")
                continue
            if clean["id"] in seen:  # two figures under one id would share the deck page's widgets
                clean["id"] = uuid.uuid4().hex[:10]
            seen.add(clean["id"])
            deck.append(clean)
        settings["deck"] = deck
    if settings.get("model_kind") == "upload":
        notes.append("uploaded checkpoints are not stored in session files: upload the file again")
    page = data.get("page") if isinstance(data.get("page"), str) else None
    return settings, page, notes
