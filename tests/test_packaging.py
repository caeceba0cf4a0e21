"""`pip install .` gives a working package: every module and asset the app needs under one import name,
`attention_lab` (nothing generic at the top level), the pins of requirements.txt, and an `attention-lab` command
whose app runs from anywhere (not from the checkout), even from a folder that holds a `model.py` and a `viz.py`."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest

from viz.launch import command

ROOT = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))


def requirement_pins() -> list[str]:
    lines = (ROOT / "requirements.txt").read_text(encoding="utf-8").splitlines()
    return [line.split("#")[0].strip() for line in lines if line.split("#")[0].strip()]


def test_the_package_declares_the_same_pins_and_every_package():
    assert PYPROJECT["project"]["dependencies"] == requirement_pins()
    assert not any("transformers" in d for d in PYPROJECT["project"]["dependencies"])
    packages = set(PYPROJECT["tool"]["setuptools"]["packages"])
    found = {p.parent.relative_to(ROOT).as_posix().replace("/", ".") for p in ROOT.glob("[mv]*/**/__init__.py")}
    found = {f"attention_lab.{p}" for p in found} | {"attention_lab", "attention_lab.assets"}
    assert found <= packages, f"not packaged: {sorted(found - packages)}"
    assert all(p.startswith("attention_lab") for p in packages)  # one import name, nothing generic


def test_the_command_starts_the_app_with_the_projects_server_settings():
    argv = command(["--server.address=0.0.0.0"])
    assert argv[:3] == ["streamlit", "run", str(ROOT / "serve.py")]  # the warmed-up server of app.py
    assert "--server.address=localhost" in argv and argv[-1] == "--server.address=0.0.0.0"  # the user's flag wins
    assert "--client.showErrorDetails=none" in argv and "--server.enableXsrfProtection=true" in argv


@pytest.mark.slow
def test_the_built_wheel_installs_and_its_app_runs_outside_the_checkout(tmp_path):
    pip = [sys.executable, "-m", "pip"]
    build = ["--no-deps", "--no-build-isolation", "-q", "-w", str(tmp_path)]
    leftovers = [ROOT / "build", ROOT / "attention_lab.egg-info"]
    fresh = [p for p in leftovers if not p.exists()]
    try:
        subprocess.run([*pip, "wheel", str(ROOT), *build], check=True)
    finally:  # setuptools builds in the source tree: leave the checkout as it was
        for p in fresh:
            shutil.rmtree(p, ignore_errors=True)
    (wheel,) = tmp_path.glob("attention_lab-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    assert {n.split("/")[0] for n in names} == {"attention_lab", "attention_lab-0.1.0.dist-info"}  # one name
    sources = {
        "attention_lab/" + p.relative_to(ROOT).as_posix() for d in ("model", "viz") for p in (ROOT / d).rglob("*.py")
    }
    assert sources <= names, sorted(sources - names)
    needed = {"app.py", "serve.py", "assets/bundled.safetensors", "assets/tokenizer.json", "_streamlit/config.toml"}
    needed.add("viz/shell/components/head_view.js")
    assert {f"attention_lab/{n}" for n in needed} <= names
    boot = zipfile.ZipFile(wheel).read("attention_lab/viz/shell/boot.py").decode()
    app = zipfile.ZipFile(wheel).read("attention_lab/app.py").decode()
    assert '"attention_lab.viz.shell.prepare"' in boot and "from attention_lab.viz.shell" in app  # namespaced
    entry = zipfile.ZipFile(wheel).read("attention_lab-0.1.0.dist-info/entry_points.txt").decode()
    assert "attention-lab = attention_lab.viz.launch:main" in entry
    site = tmp_path / "site"
    subprocess.run([*pip, "install", "-q", "--no-deps", "--target", str(site), str(wheel)], check=True)
    work = tmp_path / "research"  # a researcher's folder: their own model.py and viz.py, first on sys.path
    work.mkdir()
    for mine in ("model.py", "viz.py", "app.py"):
        (work / mine).write_text("raise RuntimeError('the researcher's own file was imported')\n")
    probe = (
        "import sys; sys.path.insert(1, sys.argv[1]);"
        "from streamlit.testing.v1 import AppTest; from attention_lab.model.io.catalog import ModelSpec, load;"
        "import attention_lab.viz.launch as launch; import attention_lab;"
        "assert attention_lab.__file__.startswith(sys.argv[1]), attention_lab.__file__;"
        "assert load(ModelSpec('bundled')).model is not None;"
        "assert 'theme.base=light' in ' '.join(launch.command([]));"  # the installed settings copy
        "import pathlib; from attention_lab import serve; here = pathlib.Path(sys.argv[1]).resolve() / 'attention_lab';"
        "assert serve.app._resolve_script_path() == here / 'app.py', serve.app._resolve_script_path();"  # the copy
        "at = AppTest.from_file(str(here / 'app.py'), default_timeout=90); at.run();"
        "assert not at.exception, at.exception; print('figures', len(at.get('plotly_chart')));"
        "print('generic', sorted(k for k in sys.modules if k.split('.')[0] in ('model', 'viz', 'app', 'serve')))"
    )
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    out = subprocess.run(
        [sys.executable, "-c", probe, str(site)], cwd=work, env=env, capture_output=True, text=True, timeout=300
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert "figures" in out.stdout and "figures 0" not in out.stdout
    assert "generic []" in out.stdout  # nothing imported under a generic top-level name


def test_attention_lab_help_is_the_apps_own(capsys):
    """``attention-lab --help`` answers for the lab (what it starts, the flags that pass on, the environment), and
    without loading Streamlit; Streamlit's own help is not what a user asked for."""
    from viz.launch import main

    for flag in ("--help", "-h"):
        with pytest.raises(SystemExit) as done:
            main([flag])
        assert done.value.code == 0
        out = capsys.readouterr().out
        assert out.startswith("usage: attention-lab") and "--server.address 0.0.0.0" in out
        assert "ATTENTION_LAB_RUNS" in out and "Usage: streamlit" not in out
    code = "import sys\nfrom viz.launch import main\ntry: main(['--help'])\nexcept SystemExit: pass\n"
    loaded = subprocess.run(
        [sys.executable, "-c", code + "print('streamlit' in sys.modules)"],
        capture_output=True, text=True, check=True, cwd=Path(__file__).resolve().parents[1],
    )  # fmt: skip
    assert loaded.stdout.strip().endswith("False")  # answered without importing Streamlit
