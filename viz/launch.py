"""``attention-lab``: start the dashboard of an installed package (``pip install .``) as the classroom server
(``serve.py``: the app's code and default model loaded before the first browser), with the server settings of
the project's ``.streamlit/config.toml`` (listen on this machine only, XSRF protection, no error details, the
upload limit). Extra arguments go to ``streamlit run``: ``attention-lab --server.address 0.0.0.0`` serves a class.
"""

from __future__ import annotations

import sys
import tomllib
from importlib import resources
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
APP = ROOT / "serve.py"  # serves app.py, warmed up first (docs/serving.md)


def config_text() -> str:
    """The settings file: the checkout's, or the copy installed with the package."""
    local = ROOT / ".streamlit" / "config.toml"
    if local.is_file():
        return local.read_text(encoding="utf-8")
    return resources.files("attention_lab_streamlit").joinpath("config.toml").read_text(encoding="utf-8")


def flags(text: str) -> list[str]:
    """``[server] address = "localhost"`` -> ``--server.address=localhost`` (streamlit's own flag names)."""
    out = []
    for section, values in tomllib.loads(text).items():
        for key, value in values.items():
            shown = str(value).lower() if isinstance(value, bool) else str(value)
            out.append(f"--{section}.{key}={shown}")
    return out


def command(argv: list[str]) -> list[str]:
    """The ``streamlit`` argv: the app, the settings, then the user's own flags (later ones win)."""
    return ["streamlit", "run", str(APP), *flags(config_text()), *argv]


def main() -> None:
    from streamlit.web import cli  # imported here: `attention-lab --help` need not load streamlit twice

    sys.argv = command(sys.argv[1:])
    sys.exit(cli.main())
