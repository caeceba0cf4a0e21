"""Session files: the current settings as JSON, and a validated way back (no Streamlit here)."""

from __future__ import annotations

import json

FORMAT = "attention-lab-session/1"
MAX_TEXT = 200_000
#: setting -> (type, allowed values or None)
FIELDS: dict[str, tuple[type, tuple | None]] = {
    "model_kind": (str, ("bundled", "random", "minilm", "upload", "folder")),
    "rand_layers": (int, None),
    "rand_heads": (int, None),
    "rand_d_model": (int, None),
    "rand_seed": (int, None),
    "rand_positional": (str, ("sinusoidal", "learned", "rope", "none")),
    "folder_path": (str, None),
    "device": (str, None),
    "text": (str, None),
    "hide_special": (bool, None),
    "layer": (int, None),
    "head": (int, None),
    "presentation": (bool, None),
    "dark": (bool, None),
    "colorscale": (str, None),
    "causal_override": (str, ("as built", "on", "off")),
    "scale_scores": (bool, None),
    "attn_mode": (str, None),
    "hv_threshold": (float, None),
}


def dump_session(state: dict, page: str) -> str:
    """The settings found in ``state`` (a mapping such as st.session_state) as pretty JSON."""
    settings = {k: state[k] for k in FIELDS if k in state}
    return json.dumps({"format": FORMAT, "page": page, "settings": settings}, indent=2, ensure_ascii=False)


def load_session(text: str | bytes) -> tuple[dict, str | None, list[str]]:
    """Parse a session file. Returns (settings to apply, page url path, notes about what was skipped).

    Raises ValueError when the file is not a session file at all.
    """
    try:
        data = json.loads(text)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"not a session file: {exc}") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT or not isinstance(data.get("settings"), dict):
        raise ValueError(f"not an Attention Lab session file (expected format {FORMAT!r})")
    settings, notes = {}, []
    for key, value in data["settings"].items():
        if key not in FIELDS:
            notes.append(f"ignored unknown setting {key!r}")
            continue
        kind, allowed = FIELDS[key]
        if kind is float and isinstance(value, int) and not isinstance(value, bool):
            value = float(value)
        if (kind is int and isinstance(value, bool)) or not isinstance(value, kind):
            notes.append(f"ignored {key!r}: expected {kind.__name__}")
            continue
        if allowed is not None and value not in allowed:
            notes.append(f"ignored {key!r}: {value!r} is not one of {allowed}")
            continue
        if key == "text" and len(value) > MAX_TEXT:
            value = value[:MAX_TEXT]
            notes.append("the text was cut to 200,000 characters")
        if kind is int and not 0 <= value <= 10**9:
            notes.append(f"ignored {key!r}: out of range")
            continue
        settings[key] = value
    if settings.get("model_kind") == "upload":
        notes.append("uploaded checkpoints are not stored in session files: upload the file again")
    page = data.get("page") if isinstance(data.get("page"), str) else None
    return settings, page, notes
