"""Hostile inputs against a live classroom server: how fast each is refused and how much memory it costs.

``python bench/hostile.py`` starts ``serve.py`` (the classroom server), opens it in chromium, and for each case —
the issue-48 zip bomb (a 2 GiB config.json of spaces in a 9 MB .zip), a weights bomb (1.9 GB of zeros as
model.safetensors in an 8 MB .zip), a 60 MB session file of empty lists, a deck link nested 30,000 deep, a link of
NaN and out-of-range numbers, a 1 MB pasted text and a 10 MB one-line corpus profiled — times it from the upload or
the page load to the page's answer, and samples the server's RSS every 20 ms meanwhile (the peak above the idle
level). Prints a markdown table for bench/RESULTS.md.
"""

from __future__ import annotations

import base64
import io
import os
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
import zipfile
import zlib
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from scripts.browser import ROOT, chromium, free_port, wait_idle


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


class Peak:
    """The highest RSS of ``pid`` while the block runs (sampled every 20 ms)."""

    def __init__(self, pid: int) -> None:
        self.pid, self.peak, self._stop = pid, 0.0, threading.Event()

    def __enter__(self) -> Peak:
        def sample() -> None:
            while not self._stop.is_set():
                self.peak = max(self.peak, rss_mb(self.pid))
                time.sleep(0.02)

        self._thread = threading.Thread(target=sample, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()


def zip_of(name: str, chunk: bytes, copies: int) -> bytes:
    """A .zip holding ``name`` = ``chunk`` × ``copies``, deflated as it streams (never all in memory here)."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED, compresslevel=1) as z:
        if not name.endswith("config.json"):
            z.writestr("m/config.json", b'{"model_type": "llama"}')
        with z.open(name, "w", force_zip64=True) as f:
            for _ in range(copies):
                f.write(chunk)
    return buf.getvalue()


def pick(page, label: str, option: str) -> None:
    page.get_by_role("combobox", name=label, exact=True).click()
    page.get_by_role("option", name=option, exact=True).click()
    wait_idle(page)


def main() -> None:
    folder = Path(tempfile.mkdtemp(prefix="hostile-"))
    mb64 = 64 * 2**20
    (folder / "zip-bomb.zip").write_bytes(zip_of("m/config.json", b" " * mb64, 32))  # 2 GiB of spaces
    (folder / "weights-bomb.zip").write_bytes(zip_of("m/model.safetensors", bytes(mb64), 29))  # 1.9 GB of zeros
    bomb = b'{"format": "attention-lab-session/1", "settings": {"text": [' + b"[]," * 20_000_000 + b"[]]}}"
    (folder / "session-bomb.json").write_bytes(bomb)
    deep = base64.urlsafe_b64encode(zlib.compress(b"[" * 30_000 + b"]" * 30_000)).decode().rstrip("=")
    line = b"the animal didn't cross the street because it was too tired "
    (folder / "one-line.txt").write_bytes((line * 200_000)[:9_999_999])  # a 10 MB corpus on one line
    pasted = ("The animal didn't cross the street because it was too tired. " * 20_000)[:1_000_000]

    port = free_port()
    env = {**os.environ, "ATTENTION_LAB_RUNS": str(folder / "runs"), "PYTHONUNBUFFERED": "1"}
    cmd = [sys.executable, "-m", "streamlit", "run", "serve.py", "--server.port", str(port),
           "--server.address", "127.0.0.1", "--server.headless", "true"]  # fmt: skip
    server = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    rows = []
    try:
        for _ in range(300):
            try:
                with urllib.request.urlopen(url + "/_stcore/health", timeout=2):
                    break
            except OSError:
                time.sleep(0.3)
        with chromium() as browser:

            def fresh(path: str = "", charts: bool = True):
                page = browser.new_page(viewport={"width": 1400, "height": 1000})
                page.goto(url + path)
                wait_idle(page)
                if charts:
                    page.locator(".js-plotly-plot").first.wait_for(timeout=120_000)
                return page

            warm = fresh()
            warm.close()
            time.sleep(2)
            idle = rss_mb(server.pid)

            def answered(page, act, said: str) -> tuple[float, str]:
                """Seconds from ``act()`` to the page saying ``said``, and the line it said; the page is closed."""
                t0 = time.perf_counter()
                act()
                answer = page.get_by_text(said, exact=False).first
                answer.wait_for(timeout=300_000)
                took, text = time.perf_counter() - t0, answer.inner_text()
                page.close()
                return took, text

            def upload(file: str, said: str) -> tuple[float, str]:
                page = fresh()
                pick(page, "Model source", "Upload a checkpoint file")
                box = page.locator('input[type="file"][accept*=".zip"]')
                return answered(page, lambda: box.set_input_files(str(folder / file)), said)

            def session(said: str) -> tuple[float, str]:
                page = fresh()
                page.get_by_text("Session file").first.click()
                box = page.locator('input[type="file"][accept*=".json"]').first
                return answered(page, lambda: box.set_input_files(str(folder / "session-bomb.json")), said)

            def paste(said: str) -> tuple[float, str]:
                page = fresh()
                box = page.get_by_label("Text to analyse")

                def act() -> None:
                    box.fill(pasted)
                    box.press("Control+Enter")

                return answered(page, act, said)

            def corpus(said: str) -> tuple[float, str]:
                page = fresh("/corpus", charts=False)
                page.get_by_text("my .txt or .jsonl file").click()
                wait_idle(page)
                box = page.locator('input[type="file"][accept*=".txt"]')

                def act() -> None:
                    box.set_input_files(str(folder / "one-line.txt"))
                    page.get_by_role("button", name="Run the corpus").click(timeout=120_000)

                return answered(page, act, said)

            def link(query: str, said: str) -> tuple[float, str]:
                page = browser.new_page(viewport={"width": 1400, "height": 1000})
                return answered(page, lambda: page.goto(url + "/" + query), said)

            cases = [
                ("zip bomb: 2 GiB config.json of spaces in a 9 MB .zip", lambda: upload("zip-bomb.zip", "any real one")),
                ("weights bomb: 1.9 GB of zeros in an 8 MB .zip", lambda: upload("weights-bomb.zip", "compresses")),
                ("session file: 60 MB of empty lists", lambda: session("arrays and objects")),
                ("deck link nested 30,000 deep", lambda: link(f"?deck={deep}", "deck could not be read")),
                ("link: hv_threshold=nan, ind_period=1000000",
                 lambda: link("lessons?hv_threshold=nan&ind_period=1000000", "The link's")),
                ("a 1 MB pasted text", lambda: paste("only the first 200,000 were read")),
                ("a 10 MB corpus on one line, profiled", lambda: corpus("profiled in")),
            ]  # fmt: skip
            for name, case in cases:
                time.sleep(1)
                base = rss_mb(server.pid)
                with Peak(server.pid) as peak:
                    took, text = case()
                rows.append((name, took, max(0.0, peak.peak - base), text.splitlines()[0][:90]))
    finally:
        server.terminate()
        server.wait(20)
    print(f"## Hostile inputs (`python bench/hostile.py`): serve.py, idle RSS {idle:.0f} MB")
    print("| case | answered in | RSS peak above idle | what the page said |")
    print("| --- | --- | --- | --- |")
    for name, took, above, text in rows:
        print(f"| {name} | {took:.2f} s | {above:.0f} MB | {text} |")


if __name__ == "__main__":
    main()
