"""``attention-lab``: start the dashboard of an installed package (``pip install .``) as the classroom server
(``serve.py``: the app's code and default model loaded before the first browser), with the server settings of
the project's ``.streamlit/config.toml`` (listen on this machine only, XSRF protection, no error details, the
upload limit). Extra arguments go to ``streamlit run``: ``attention-lab --server.address 0.0.0.0`` serves a class.
"""

from __future__ import annotations

import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
APP = ROOT / "serve.py"  # serves app.py, warmed up first (docs/serving.md)


def config_text() -> str:
    """The settings file: the checkout's, or the copy installed with the package (attention_lab/_streamlit/)."""
    local = ROOT / ".streamlit" / "config.toml"
    if not local.is_file():
        local = ROOT / "_streamlit" / "config.toml"
    return local.read_text(encoding="utf-8")


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


HELP = """usage: attention-lab [--version] [-h] [STREAMLIT_FLAG ...]

Attention Lab: see what attention does. Starts the dashboard as the classroom server (serve.py: the app's code and
its default model loaded before the first browser) at http://localhost:8501, with the project's server settings:
this machine only, XSRF protection, no error details, a 200 MB upload limit.

Any other flag goes to `streamlit run` and wins over the settings, e.g.
  attention-lab --server.address 0.0.0.0       serve a class on the network (read docs/serving.md first)
  attention-lab --server.port 8600             another port

Environment: ATTENTION_LAB_RUNS and ATTENTION_LAB_PROFILES (where training runs and corpus profiles are kept),
ATTENTION_LAB_MODEL_DIRS (folders whose models the path box may open), ATTENTION_LAB_CACHE_MB (the shared cache),
ATTENTION_LAB_TRAIN_JOBS, ATTENTION_LAB_LONG_JOBS, ATTENTION_LAB_CORPUS_JOBS (runs at once of each kind),
ATTENTION_LAB_UNWATCHED (seconds before an unwatched training run gives up its place); docs/serving.md has them all.
Also: python -m viz.export --help (figures and the lecture from the command line).
"""


def main(argv: list[str] | None = None) -> None:
    args = sys.argv[1:] if argv is None else list(argv)
    if args and args[0] in ("-h", "--help", "help"):
        print(HELP, end="")
        sys.exit(0)
    if args and args[0] == "--version":
        from importlib.metadata import PackageNotFoundError, version

        try:
            print(f"attention-lab {version('attention-lab')}")
        except PackageNotFoundError:
            print("attention-lab (from a checkout)")
        sys.exit(0)
    from streamlit.web import cli  # imported here: `attention-lab --help` never loads streamlit

    sys.argv = command(args)
    sys.exit(cli.main())
