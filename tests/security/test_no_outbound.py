"""Starting the server opens no connection to anywhere else — not Streamlit's usage statistics, not its lookup of
this machine's public address (made when it listens on 0.0.0.0, as a classroom server does): every socket connect
of the server process is logged by a sitecustomize, and none may leave the machine."""

from __future__ import annotations

import json
import subprocess
import sys
import time
import urllib.request

import pytest

from scripts.browser import ROOT, free_port

pytestmark = pytest.mark.slow

LOGGER = """
import json, os, socket
_log = os.environ["CONNECT_LOG"]
_connect = socket.socket.connect
def connect(self, address):
    with open(_log, "a") as fh:
        fh.write(json.dumps([str(a) for a in (address if isinstance(address, tuple) else (address,))]) + "\\n")
    return _connect(self, address)
socket.socket.connect = connect
"""


def outside(address: list[str]) -> bool:
    host = address[0]
    return not (host.startswith(("127.", "::1", "/")) or host in ("localhost", "0.0.0.0", "::"))


@pytest.mark.parametrize("script", ["app.py", "serve.py"])
def test_starting_a_classroom_server_connects_nowhere_else(script, tmp_path):
    (tmp_path / "sitecustomize.py").write_text(LOGGER)
    log = tmp_path / "connects.jsonl"
    port = free_port()
    env = {"PYTHONPATH": f"{tmp_path}:{ROOT}", "CONNECT_LOG": str(log), "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
    cmd = [sys.executable, "-m", "streamlit", "run", script, "--server.port", str(port), "--server.address", "0.0.0.0"]
    proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        deadline = time.time() + 60
        while time.time() < deadline:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/_stcore/health", timeout=2) as r:
                    if r.status == 200:
                        break
            except OSError:
                time.sleep(0.3)
        else:
            pytest.fail("the server did not start")
        time.sleep(2)  # what it does right after starting (the welcome message, its address lookups)
    finally:
        proc.terminate()
        out = proc.communicate(timeout=20)[0]
    connects = [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []
    assert not [c for c in connects if outside(c)], (connects, out[-2000:])
    assert "External URL" not in out
