"""Static images through kaleido: every view of the bundled model on a short text and of SmolLM2 on 72 tokens (the
export layout sweep's cases), each figure as SVG and as PNG (3×), through kaleido's own sync server (which loads its
page again after every image) and through ours (viz/export/render.py: again every RELOAD_EVERY images). Checks
that both give the same bytes (PNG byte for byte, SVG as canonical XML but for plotly's random element ids) and prints a Markdown
table (bench/RESULTS.md, "Images").

    python bench/render.py [--models bundled smollm2]
"""

from __future__ import annotations

import argparse
import re
import statistics
import sys
import time
from pathlib import Path
from xml.etree.ElementTree import canonicalize

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

TEXTS = {
    "bundled": "The cat sat on the mat.",
    "smollm2": " ".join(["The cat sat on the mat because it was tired, and then the dog barked."] * 4),
}


def figures(kind: str) -> list:
    from model.io.catalog import ModelSpec
    from viz.figures import Theme
    from viz.views import REGISTRY, ViewUnavailableError, build
    from viz.views.source import DirectSource

    src = DirectSource.for_text(ModelSpec(kind), TEXTS[kind])
    out = []
    for key in REGISTRY:
        if key.startswith(("causes.patching", "causes.attribution_patching", "causes.paths", "lesson.needle")):
            continue  # long sweeps to compute, ordinary figures to draw
        try:
            out += [v.figure for v in build(key, src, Theme())]
        except ViewUnavailableError:  # a view this model cannot draw
            continue
    return out


def same_svg(a: bytes, b: bytes) -> bool:
    """The same drawing: equal canonical XML (attributes in one order: a legend's box drawn again on a page lists
    its attributes in another) once plotly's random ids are named alike."""

    def plain(svg: bytes) -> str:
        text = svg.decode()
        text = text.replace(re.search(r"defs-([0-9a-f]{6})", text).group(1), "ID")
        return canonicalize(re.sub(r"(cb|trace)[0-9a-f]{6}", r"\1ID", text))

    return plain(a) == plain(b)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", nargs="+", default=list(TEXTS))
    args = parser.parse_args()
    import kaleido

    from viz.export.render import render_image
    from viz.figures.common import export_size

    kaleido.start_sync_server(mathjax=False, silence_warnings=True)
    rows = []
    for kind in args.models:
        figs = figures(kind)
        for fmt in ("svg", "png"):
            theirs, ours, same = [], [], 0
            for fig in figs:
                width, height = export_size(fig, "screen")
                opts = {"format": fmt, "scale": 1 if fmt == "svg" else 3, "width": width, "height": height}
                render_image(fig, fmt)  # both servers started, and this figure's fonts loaded
                t = time.perf_counter()
                a = kaleido.calc_fig_sync(fig, opts=opts)
                theirs.append(time.perf_counter() - t)
                t = time.perf_counter()
                b = render_image(fig, fmt)
                ours.append(time.perf_counter() - t)
                same += same_svg(a, b) if fmt == "svg" else a == b
            rows.append((kind, fmt, len(figs), same, sum(theirs), sum(ours), statistics.median(theirs),
                         statistics.median(ours)))  # fmt: skip
            print(rows[-1], flush=True)
    print(
        "\n| model | format | figures | same drawing | kaleido's server s | ours s | median per image (kaleido → ours) |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for kind, fmt, n, same, a, b, ma, mb in rows:
        print(
            f"| {kind} | {fmt.upper()} | {n} | {same} of {n} | {a:.1f} | {b:.1f} | {ma * 1000:.0f} → {mb * 1000:.0f} ms |"
        )


if __name__ == "__main__":
    main()
