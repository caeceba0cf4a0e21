"""Which local paths a server opens: the folders it shares, the working directory on localhost, nothing on the
network; links and '..' that lead out are outside."""

from __future__ import annotations

import os
from pathlib import Path

from viz.shell.paths import ENV, allowed, model_dirs


def test_defaults_follow_the_address(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    for local in ("localhost", "127.0.0.1", "::1"):
        assert model_dirs(local, env={}) == [tmp_path.resolve()]
    for network in ("0.0.0.0", "", None, "192.0.2.7"):
        assert model_dirs(network, env={}) == []


def test_the_setting_wins_and_can_switch_paths_off(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    env = {ENV: f"{a}{os.pathsep}{b}"}
    assert model_dirs("0.0.0.0", env=env) == [a.resolve(), b.resolve()]
    assert model_dirs("localhost", env={ENV: ""}) == []


def test_inside_outside_links_and_dots(tmp_path, monkeypatch):
    root = tmp_path / "models"
    (root / "run").mkdir(parents=True)
    (tmp_path / "secret").write_text("x")
    (root / "escape").symlink_to(tmp_path / "secret")
    (root / "inner").symlink_to(root / "run")
    roots = [root.resolve()]
    assert allowed(str(root / "run"), roots) == (root / "run").resolve()
    assert allowed(str(root / "run" / "not-yet.pt"), roots) is not None  # inside: loading says it is missing
    assert allowed(str(root / "inner"), roots) == (root / "run").resolve()
    for outside in (tmp_path / "secret", root / "escape", root / ".." / "secret", Path("/etc/passwd"), "", "a\0b"):
        assert allowed(str(outside), roots) is None, outside
    monkeypatch.chdir(root)
    assert allowed("run", roots) == (root / "run").resolve()  # relative to the working directory
    assert allowed("../secret", roots) is None
    assert allowed("~", roots) is None
