"""The garbage collector's share of a server's work: N openings of the Attention map, each with its own text.

``python bench/gc_pause.py --texts 30 --model minilm`` runs app.py in-process (Streamlit's AppTest, one session
after another, the same script runs a server makes) twice, each in a fresh process: with Python's collector as it
comes (youngest generation after 700 new objects, nothing frozen) and as ``viz.shell.boot.import_once`` sets it
for the app (the imports frozen, the youngest generation after ``YOUNG_THRESHOLD``). It times every collection
with ``gc.callbacks`` and prints a Markdown table: collections per generation, seconds in them, the runs' time.
"""

from __future__ import annotations

import argparse
import gc
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def measure(texts: int, model: str, default: bool) -> str:
    """One process's row: ``default`` keeps Python's collector as it comes."""
    from streamlit.testing.v1 import AppTest

    from bench.load import session_text
    from viz.shell import boot

    if default:  # import_once leaves the collector alone
        boot.gc = SimpleNamespace(freeze=lambda: None, get_threshold=gc.get_threshold, set_threshold=lambda *a: None)
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
    at.query_params["model_kind"] = model
    at.run()  # the teacher's run: imports, the model loaded (not counted)
    spent, count, start = [0.0, 0.0, 0.0], [0, 0, 0], [0.0]

    def timer(phase: str, info: dict) -> None:
        if phase == "start":
            start[0] = time.perf_counter()
        else:
            spent[info["generation"]] += time.perf_counter() - start[0]
            count[info["generation"]] += 1

    gc.callbacks.append(timer)
    t0 = time.perf_counter()
    for i in range(texts):
        at.sidebar.text_area(key="text").set_value(session_text(i, 64)).run()
        assert not at.exception, at.exception
    total = time.perf_counter() - t0
    gc.callbacks.remove(timer)
    how = "as Python comes (700, nothing frozen)" if default else f"the app's ({boot.YOUNG_THRESHOLD:,}, frozen)"
    return (
        f"| {model} | {how} | {texts} | {count[0]} / {count[1]} / {count[2]} | "
        f"{spent[0]:.2f} / {spent[1]:.2f} / {spent[2]:.2f} | {sum(spent):.2f} | {total:.1f} |"
    )


def main(argv: list[str] | None = None) -> str:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--texts", type=int, default=30)
    p.add_argument("--model", default="minilm")
    p.add_argument("--one", choices=("default", "app"), help=argparse.SUPPRESS)  # a child process's single row
    args = p.parse_args(argv)
    if args.one:
        row = measure(args.texts, args.model, args.one == "default")
        print(row)
        return row
    lines = [
        f"## The collector's share (`python bench/gc_pause.py --texts {args.texts} --model {args.model}`)",
        "",
        "| model | collector | openings | collections gen 0 / 1 / 2 | s in them gen 0 / 1 / 2 | s in all | runs' s |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for one in ("default", "app"):
        out = subprocess.run([sys.executable, __file__, "--texts", str(args.texts), "--model", args.model,
                              "--one", one], capture_output=True, text=True, check=True, cwd=ROOT)  # fmt: skip
        lines.append(out.stdout.strip().splitlines()[-1])
    text = "\n".join(lines)
    print(text)
    return text


if __name__ == "__main__":
    main()
