"""The three-layer rule, no import circles, small modules — checked on the code, not by reading it.

pages/shell -> figures, pages/shell -> model; figures never import torch, streamlit or model; model never
imports streamlit, plotly or viz. Each rule is checked twice: statically on every import statement
(function-level imports included) and dynamically in a fresh interpreter.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
MAX_LINES = 320


def project_modules() -> dict[str, Path]:
    """Every module of the app: model.*, viz.*, app and serve (the classroom server)."""
    mods = {"app": ROOT / "app.py", "serve": ROOT / "serve.py"}
    for package in ("model", "viz"):
        for path in sorted((ROOT / package).rglob("*.py")):
            parts = path.relative_to(ROOT).with_suffix("").parts
            name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
            mods[name] = path
    return mods


MODULES = project_modules()


def imports_of(path: Path) -> set[str]:
    """Every module an import statement in ``path`` names (top-level or inside functions)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
    return found


def graph() -> dict[str, set[str]]:
    """Project module -> the project modules it imports (names that are attributes, not modules, dropped)."""
    return {name: {m for m in imports_of(path) if m in MODULES and m != name} for name, path in MODULES.items()}


def find_cycle(edges: dict[str, set[str]]) -> list[str] | None:
    """One import circle as a list of modules, or None. A package's own __init__ is not counted as an edge
    from its submodules (importing ``a.b`` runs ``a`` first, which is not a circle by itself)."""
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(edges[node]):
            if node.startswith(nxt + "."):
                continue
            if state.get(nxt) == 1:
                return [*stack[stack.index(nxt) :], nxt]
            if nxt not in state:
                cycle = visit(nxt)
                if cycle:
                    return cycle
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(edges):
        if node not in state:
            cycle = visit(node)
            if cycle:
                return cycle
    return None


@pytest.mark.slow
def test_there_is_no_import_circle():
    assert find_cycle(graph()) is None, " -> ".join(find_cycle(graph()))


@pytest.mark.slow
def test_the_cycle_finder_finds_a_planted_circle():
    edges = graph()
    edges["model.io.state"] = edges["model.io.state"] | {"model.io.catalog"}  # catalog -> ... -> state -> catalog
    assert find_cycle(edges) is not None


FORBIDDEN = {
    "model": ("streamlit", "plotly", "viz", "kaleido"),
    "viz.figures": ("torch", "streamlit", "model"),
    "viz.export": ("streamlit",),
    "viz.settings": ("streamlit",),
    "viz.session": ("streamlit",),
    "viz.views": ("streamlit",),
}


def layer_violations(name: str, imported: set[str]) -> list[str]:
    for prefix, banned in FORBIDDEN.items():
        if name == prefix or name.startswith(prefix + "."):
            return [m for m in sorted(imported) if m.split(".")[0] in banned or m.startswith(banned)]
    return []


@pytest.mark.parametrize("name", sorted(MODULES))
def test_layers_import_only_downwards(name):
    assert not layer_violations(name, imports_of(MODULES[name])), name


def test_the_layer_rule_flags_a_planted_import():
    assert layer_violations("viz.figures.common", {"numpy", "streamlit"}) == ["streamlit"]
    assert layer_violations("model.observe", {"torch", "viz.figures"}) == ["viz.figures"]
    assert layer_violations("viz.pages.attention", {"streamlit", "torch"}) == []


def fresh(code: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120)


def _import_all(prefix: str) -> str:
    names = [n for n in MODULES if n == prefix or n.startswith(prefix + ".")]
    names = [n for n in names if not n.endswith("__main__")]
    return "import importlib, sys\n" + "".join(f"importlib.import_module({n!r})\n" for n in names)


@pytest.mark.slow
def test_figures_alone_pull_in_neither_torch_nor_streamlit():
    code = _import_all("viz.figures") + "bad = [m for m in ('torch', 'streamlit', 'model') if m in sys.modules]\n"
    result = fresh(code + "assert not bad, bad\n")
    assert result.returncode == 0, result.stderr


@pytest.mark.slow
def test_the_model_layer_pulls_in_no_ui_library():
    code = _import_all("model") + "bad = [m for m in ('streamlit', 'plotly', 'viz', 'kaleido') if m in sys.modules]\n"
    result = fresh(code + "assert not bad, bad\n")
    assert result.returncode == 0, result.stderr


@pytest.mark.slow
def test_export_settings_and_sessions_run_without_streamlit():
    code = _import_all("viz.export") + _import_all("viz.settings") + _import_all("viz.session")
    result = fresh(code + "assert 'streamlit' not in sys.modules\n")
    assert result.returncode == 0, result.stderr


TOOLS = {f"{p.parent.name}/{p.name}": p for d in ("bench", "scripts") for p in sorted((ROOT / d).glob("*.py"))}


@pytest.mark.parametrize("name", sorted(MODULES) + sorted(TOOLS))
def test_modules_stay_small(name):
    """The app's modules, and the benchmarks and scripts beside it."""
    lines = len({**MODULES, **TOOLS}[name].read_text(encoding="utf-8").splitlines())
    assert lines <= MAX_LINES, f"{name} has {lines} lines; split it by concept"


def bare_expressions(source: str) -> list[int]:
    """Lines of the statements Streamlit's "magic" would draw: an expression standing alone that is neither a call
    nor a docstring (a module's, function's or class's first statement)."""
    tree = ast.parse(source)
    docs = {
        id(node.body[0])
        for node in ast.walk(tree)
        if isinstance(node, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }
    return [
        node.lineno
        for node in ast.walk(tree)
        if isinstance(node, ast.Expr)
        and id(node) not in docs
        and not isinstance(node.value, (ast.Call, ast.Await, ast.Yield, ast.YieldFrom))
    ]


def test_no_script_relies_on_streamlits_magic():
    """.streamlit/config.toml turns magic off (no syntax-tree rewrite of each page script before it is compiled),
    so a bare expression in a script Streamlit runs would silently draw nothing: there is none."""
    import tomllib

    config = tomllib.loads((ROOT / ".streamlit" / "config.toml").read_text(encoding="utf-8"))
    assert config["runner"]["magicEnabled"] is False
    scripts = [ROOT / "app.py", *sorted((ROOT / "viz" / "pages").glob("*.py"))]
    assert len(scripts) > 20
    found = {p.name: lines for p in scripts if (lines := bare_expressions(p.read_text(encoding="utf-8")))}
    assert not found, f"bare expressions (magic is off; write st.write(...)): {found}"
    planted = '"""Doc."""\nimport streamlit as st\nst.title("x")\n"drawn by magic"\nx = 1\nx\n'
    planted += 'def f():\n    """Doc."""\n'
    assert bare_expressions(planted) == [4, 6]
