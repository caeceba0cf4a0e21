"""The animation as files: every frame rendered by the export path (render_view: the size the sidebar asks for,
the computed caption in a band, provenance in the metadata), then put together as a GIF (Pillow, through
imageio), an MP4 (H.264 through the ffmpeg binary of the imageio-ffmpeg wheel) or a zip of numbered PNGs."""

from __future__ import annotations

import io
import os
import tempfile
import zipfile
from collections.abc import Sequence

import numpy as np

MP4_FPS = 2  # each frame is held for its seconds at this rate: 4 copies of a 2-s step (it was 10: 20 copies, 10 s to
#              encode 12 frames at 1920 px on 2 cores; players, PowerPoint and Keynote step through either alike)


def render_frames(views: Sequence, *, size: str = "screen", caption: bool = True, provenance=None) -> list[bytes]:
    """One PNG per view, as the download buttons render it (``views``: the frames, in order)."""
    from viz.export.render import render_view

    return [render_view(v, "png", size=size, caption=caption, provenance=provenance) for v in views]


def _pixels(pngs: Sequence[bytes], max_width: int | None = None) -> list[np.ndarray]:
    """RGB arrays of the frames on one canvas (the largest frame's size, even sides as H.264 needs; smaller frames
    centred at the top, on white), at most ``max_width`` wide."""
    from PIL import Image

    images = [Image.open(io.BytesIO(p)).convert("RGB") for p in pngs]
    width = max(i.width for i in images)
    height = max(i.height for i in images)
    if max_width and width > max_width:
        ratio = max_width / width
        images = [i.resize((max(1, round(i.width * ratio)), max(1, round(i.height * ratio)))) for i in images]
        width, height = max(i.width for i in images), max(i.height for i in images)
    width, height = width + width % 2, height + height % 2
    out = []
    for image in images:
        canvas = Image.new("RGB", (width, height), "white")
        canvas.paste(image, ((width - image.width) // 2, 0))  # top-aligned: the plot stays put, the band varies
        out.append(np.asarray(canvas))
    return out


def gif(pngs: Sequence[bytes], seconds: float = 2.0, max_width: int | None = 1280) -> bytes:
    """An endlessly looping GIF, each frame shown ``seconds``."""
    import imageio.v3 as iio

    frames = _pixels(pngs, max_width)
    return iio.imwrite("<bytes>", np.stack(frames), extension=".gif", duration=int(seconds * 1000), loop=0)


def mp4(pngs: Sequence[bytes], seconds: float = 2.0, max_width: int | None = 1920) -> bytes:
    """An H.264 MP4 (yuv420p: plays in browsers, PowerPoint and Keynote), each frame held ``seconds``."""
    import imageio.v2 as iio2

    frames = _pixels(pngs, max_width)
    repeat = max(1, round(seconds * MP4_FPS))
    handle, path = tempfile.mkstemp(suffix=".mp4")
    os.close(handle)
    try:
        writer = iio2.get_writer(
            path,
            format="FFMPEG",
            fps=MP4_FPS,
            codec="libx264",
            pixelformat="yuv420p",
            macro_block_size=2,
            quality=8,
            ffmpeg_params=["-preset", "veryfast", "-tune", "stillimage"],  # still frames: no motion search worth it
        )
        try:
            for frame in frames:
                for _ in range(repeat):
                    writer.append_data(frame)
        finally:
            writer.close()
        with open(path, "rb") as f:
            return f.read()
    finally:
        os.unlink(path)


def png_zip(pngs: Sequence[bytes], stem: str) -> bytes:
    """The frames as ``{stem}_01.png`` … in one zip (numbered so that they sort in order)."""
    buf = io.BytesIO()
    digits = max(2, len(str(len(pngs))))
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_STORED) as z:
        for i, png in enumerate(pngs, start=1):
            z.writestr(f"{stem}_{i:0{digits}d}.png", png)
    return buf.getvalue()
