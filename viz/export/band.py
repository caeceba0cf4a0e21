"""What an image carries besides the plot: the computed caption in a band under it, and the caption with the
figure's provenance (model, text, view, selection, app version) in the file's metadata (SVG ``<title>``,
``<desc>``, ``<metadata>``; PNG ``iTXt`` chunks), so that the takeaway travels with the figure."""

from __future__ import annotations

import html
import io
import json
import struct
import zlib
from functools import cache

from viz.figures.text import wrap

BAND_PAD = 14  # px (layout units) above, below and left of the caption text
LINE = 1.35  # line height in font sizes
FONT_FAMILY = "DejaVu Sans, Arial, Helvetica, sans-serif"


def band_lines(caption: str, width: float, font_px: float) -> list[str]:
    """The caption's lines (plain text) at ``font_px`` in a band ``width`` px wide."""
    if not caption:
        return []
    return [html.unescape(line) for line in wrap(caption, width - 2 * BAND_PAD, font_px).split("<br>")]


SLIDE_BAND_LINES = 4  # a slide's caption band: the plot keeps at least ~60 % of the slide


def slide_caption(caption: str, width: float, font_px: float, lines: int = SLIDE_BAND_LINES) -> str:
    """The caption as a slide's band shows it: its first sentences that fit ``lines`` lines, or the first sentence
    cut with "…" (the whole caption stays in the file's metadata and in a deck's speaker notes)."""
    if len(band_lines(caption, width, font_px)) <= lines:
        return caption
    sentences = [s for s in caption.replace("; ", ";\n").replace(". ", ".\n").split("\n") if s]
    kept = ""
    for sentence in sentences:
        more = f"{kept} {sentence}".strip()
        if len(band_lines(more + " …", width, font_px)) > lines:
            break
        kept = more
    if kept:
        return kept + " …"
    words = caption.split(" ")
    while words and len(band_lines(" ".join(words) + " …", width, font_px)) > lines:
        words.pop()
    return " ".join(words) + " …"


def band_height(caption: str, width: float, font_px: float) -> int:
    """Height in px of the caption band (0 without a caption)."""
    lines = band_lines(caption, width, font_px)
    return round(len(lines) * LINE * font_px + 2 * BAND_PAD) if lines else 0


def svg_with_band(
    svg: bytes, caption: str, font_px: float, colors: dict[str, str], scale: float = 1.0, total: int | None = None
) -> bytes:
    """The SVG with the caption in a band under it: the figure nested unchanged, the band's text below
    (laid out in layout px, shown at ``scale``×; ``total``: the whole image's height in px)."""
    text = svg.decode("utf-8")
    head = text[: text.index(">") + 1]
    width, height = (float(_attr(head, name)) for name in ("width", "height"))
    lines = band_lines(caption, width / scale, font_px)
    full = total or height + band_height(caption, width / scale, font_px) * scale
    size, pad = font_px * scale, BAND_PAD * scale
    texts = "".join(
        f'<text x="{pad:.1f}" y="{height + pad + (i + 0.8) * LINE * size:.1f}" class="caption-band" '
        f'style="font-family: {FONT_FAMILY}; font-size: {size:.1f}px; fill: {colors["text"]}">'
        f"{html.escape(line, quote=False)}</text>"
        for i, line in enumerate(lines)
    )
    outer = (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width:g}" height="{full:g}" viewBox="0 0 {width:g} {full:g}">'
        f'<rect x="0" y="0" width="{width:g}" height="{full:g}" style="fill: {colors["bg"]}"/>'
    )
    return (outer + text + texts + "</svg>").encode("utf-8")


def _attr(tag: str, name: str) -> str:
    start = tag.index(f' {name}="') + len(name) + 3
    return tag[start : tag.index('"', start)]


@cache
def _font(size: int):
    from PIL import ImageFont

    for name in ("DejaVuSans.ttf", "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf", "Arial.ttf"):
        try:
            return ImageFont.truetype(name, size)
        except OSError:
            continue
    return ImageFont.load_default(size)


def png_with_band(
    png: bytes, caption: str, font_px: float, colors: dict[str, str], scale: float, total: int | None = None
) -> bytes:
    """The PNG with the caption in a band under it (laid out in layout px, drawn at ``scale``×; ``total``: the
    whole image's height in px)."""
    from PIL import Image, ImageDraw

    figure = Image.open(io.BytesIO(png)).convert("RGB")
    width = figure.width / scale
    lines = band_lines(caption, width, font_px)
    full = total or figure.height + round(band_height(caption, width, font_px) * scale)
    out = Image.new("RGB", (figure.width, full), colors["bg"])
    out.paste(figure, (0, 0))
    draw, font = ImageDraw.Draw(out), _font(round(font_px * scale))
    for i, line in enumerate(lines):
        y = figure.height + (BAND_PAD + i * LINE * font_px) * scale
        draw.text((BAND_PAD * scale, y), line, fill=colors["text"], font=font)
    buf = io.BytesIO()
    out.save(buf, "PNG")
    return buf.getvalue()


def svg_with_metadata(svg: bytes, title: str, caption: str, provenance: dict) -> bytes:
    """``<title>``, ``<desc>`` (the caption) and ``<metadata>`` (provenance as JSON) as the SVG's first children."""
    text = svg.decode("utf-8")
    end = text.index(">") + 1
    meta = (
        f"<title>{html.escape(title, quote=False)}</title><desc>{html.escape(caption, quote=False)}</desc>"
        f'<metadata id="attention-lab">{html.escape(json.dumps(provenance, ensure_ascii=False), quote=False)}'
        "</metadata>"
    )
    return (text[:end] + meta + text[end:]).encode("utf-8")


def png_with_metadata(png: bytes, title: str, caption: str, provenance: dict) -> bytes:
    """iTXt chunks after the header: Title, Description (the caption), Software and Comment (provenance JSON)."""
    chunks = [
        ("Title", title),
        ("Description", caption),
        ("Software", f"Attention Lab {provenance.get('app version', '')}".strip()),
        ("Comment", json.dumps(provenance, ensure_ascii=False)),
    ]
    head = 8 + 8 + 13 + 4  # signature, then the IHDR chunk (length, type, 13 bytes, CRC)
    extra = b"".join(_itxt(key, value) for key, value in chunks if value)
    return png[:head] + extra + png[head:]


def _itxt(keyword: str, text: str) -> bytes:
    body = keyword.encode("latin-1") + b"\0\0\0\0\0" + text.encode("utf-8")  # no compression, no language
    return struct.pack(">I", len(body)) + b"iTXt" + body + struct.pack(">I", zlib.crc32(b"iTXt" + body))


def png_text(png: bytes) -> dict[str, str]:
    """The iTXt/tEXt entries of a PNG (to read the metadata back)."""
    out, pos = {}, 8
    while pos < len(png):
        (length,) = struct.unpack(">I", png[pos : pos + 4])
        kind, body = png[pos + 4 : pos + 8], png[pos + 8 : pos + 8 + length]
        if kind == b"iTXt":
            key, rest = body.split(b"\0", 1)
            _language, _translated, text = rest[2:].split(b"\0", 2)  # after the compression flag and method
            out[key.decode("latin-1")] = text.decode("utf-8")
        elif kind == b"tEXt":
            key, value = body.split(b"\0", 1)
            out[key.decode("latin-1")] = value.decode("latin-1")
        pos += 12 + length
    return out
