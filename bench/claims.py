"""The block, the step-through animation and the heads gallery: what they cost.

    python bench/claims.py [--models bundled minilm smollm2] [--tokens 16 512]

Server side, per model and text length: the residual stream (one forward pass with norm hooks), the 12 frames of
the animation (views built from the cached observation), the kinds of every head; then the animation's files
(12 frames rendered by kaleido at screen and slide size, put together as GIF, MP4 and a zip). Prints Markdown.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.pages import text_of
from model.io.catalog import ModelSpec
from viz.export.animation import gif, mp4, png_zip, render_frames
from viz.figures import Theme
from viz.views import build
from viz.views.animate import STEPS
from viz.views.source import DirectSource


def timed(make):
    t0 = time.perf_counter()
    out = make()
    return out, (time.perf_counter() - t0) * 1000


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--models", nargs="+", default=["bundled", "minilm", "smollm2"])
    p.add_argument("--tokens", type=int, nargs="+", default=[16, 512])
    args = p.parse_args()
    print("| model | words | tokens | stream ms | block diagram ms | 12 frames ms (first) | kinds + gallery ms |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    keep = None
    for kind in args.models:
        for n in args.tokens:
            src = DirectSource.for_text(ModelSpec(kind), text_of(n))
            src.full()  # the page's observation with Q/K/V, as the Q/K/V page already caches it
            _, stream_ms = timed(lambda src=src: build("block.stream", src, Theme()))
            _, diagram_ms = timed(lambda src=src: build("block.diagram", src, Theme()))
            q = min(10, src.obs.n_tokens - 1)
            frames, frames_ms = timed(
                lambda src=src, q=q: [build("anim.frame", src, Theme(), query=q, step=s)[0] for s in range(len(STEPS))]
            )
            _, kinds_ms = timed(lambda src=src: build("heads.gallery", src, Theme()))
            print(
                f"| {kind} | {n} | {src.obs.n_tokens} | {stream_ms:.0f} | {diagram_ms:.0f} | {frames_ms:.0f} | "
                f"{kinds_ms:.0f} |"
            )
            keep = keep or frames
    print()
    print("| animation file | size | render 12 frames s | assemble s | bytes |")
    print("| --- | --- | --- | --- | --- |")
    for size in ("screen", "slide"):
        render_frames(keep[:1], size=size)  # the render server started
        pngs, render_ms = timed(lambda size=size: render_frames(keep, size=size, caption=True))
        for name, make in (
            ("GIF", lambda: gif(pngs)),
            ("MP4", lambda: mp4(pngs)),
            ("PNG zip", lambda: png_zip(pngs, "f")),
        ):
            data, ms = timed(make)
            print(f"| {name} | {size} | {render_ms / 1000:.1f} | {ms / 1000:.1f} | {len(data):,} |")


if __name__ == "__main__":
    main()
