"""A class of 30 on the class server (issue 48): 29 students open the app with their own texts and visit four
pages over Streamlit's own protocol while a 30th, in chromium, uploads a zip bomb — every student's pages answer,
nobody sees another's text, and the bomb is refused in words. How fast (p95 within 2× of a class without the bomb)
is measured by ``python bench/load.py --client ws --script serve.py --sessions 29 --bomb zip`` (bench/RESULTS.md)."""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor

import pytest

from bench.hostile import zip_of
from bench.load import VISITS, one_class
from scripts.browser import streamlit_server

pytestmark = pytest.mark.e2e


def test_a_class_of_thirty_with_a_zip_bomb_among_them(tmp_path, monkeypatch):
    bomb = tmp_path / "zip-bomb.zip"
    bomb.write_bytes(zip_of("m/config.json", b" " * 2**24, 16))  # 256 MB of spaces: over config.json's budget
    monkeypatch.setattr("bench.load.THINK", [0.2, 0.8])  # seconds between a student's actions
    with streamlit_server(script="serve.py", timeout=120) as url, ThreadPoolExecutor(1) as pool:
        # its own event loop, in its own thread: the browser tests' playwright keeps one running in this thread
        results = pool.submit(asyncio.run, one_class(url, 29, 64, "bundled", "ws", bomb)).result()
    assert not results["errors"], results["errors"][:5]
    assert not results["mixed"]  # each Tokens page showed its own session's text only
    assert len(results["times"]) == 29 * (1 + len(VISITS))
    assert "bomb" in results  # the upload was refused: the page said "… any real one …"
