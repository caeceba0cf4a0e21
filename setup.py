"""The wheel's build: the repository keeps ``app.py``, ``serve.py``, ``model/``, ``viz/`` and ``assets/`` at its root
(``streamlit run app.py`` from a clone), and the installed package holds them under one distinctive name,
``attention_lab`` (pyproject.toml maps the folders). As the modules are copied into the build, their imports of the
repository's top-level names are rewritten to that name: ``from model.capture import …`` becomes
``from attention_lab.model.capture import …``, and a string naming one of its modules (``"viz.shell.prepare"``)
names ``attention_lab.viz.shell.prepare``. ``app.py``, ``serve.py`` and the server settings go in beside them.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

ROOT = Path(__file__).resolve().parent
NAME = "attention_lab"
TOP = ("model", "viz", "app", "serve")
FROM = re.compile(r"^(\s*)from (model|viz|app|serve)\b", re.M)
IMPORT = re.compile(r"^(\s*)import (model|viz|app|serve)\b", re.M)
DOTTED = re.compile(r"([\"'])((?:model|viz)(?:\.\w+)+)\1")


def is_module(dotted: str) -> bool:
    path = ROOT.joinpath(*dotted.split("."))
    return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()


def namespaced(source: str) -> str:
    """A module's source with the repository's top-level imports moved under ``attention_lab``."""
    if IMPORT.search(source):
        raise SystemExit(f"write `from … import …`, not `import model/viz/app/serve`: {IMPORT.search(source)[0]!r}")
    source = FROM.sub(rf"\1from {NAME}.\2", source)
    return DOTTED.sub(lambda m: f"{m[1]}{NAME}.{m[2]}{m[1]}" if is_module(m[2]) else m[0], source)


class BuildPy(build_py):
    """build_py that namespaces every module it copies and adds the app's scripts and settings."""

    def build_module(self, module, module_file, package):
        out, copied = super().build_module(module, module_file, package)
        path = Path(out)
        path.write_text(namespaced(path.read_text(encoding="utf-8")), encoding="utf-8")
        return out, copied

    def run(self) -> None:
        shutil.rmtree(self.build_lib, ignore_errors=True)  # an earlier build's modules must not ride along
        super().run()
        target = Path(self.build_lib) / NAME
        for script in ("app.py", "serve.py"):
            (target / script).write_text(namespaced((ROOT / script).read_text(encoding="utf-8")), encoding="utf-8")
        (target / "_streamlit").mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / ".streamlit" / "config.toml", target / "_streamlit" / "config.toml")


setup(cmdclass={"build_py": BuildPy})
