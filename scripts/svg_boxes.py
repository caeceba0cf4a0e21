"""Where an exported SVG's texts land once chromium lays them out (a page of scripts/browser.py's chromium): their
boxes, which lie outside the image, which overlap, which cover the data. Used by the export and slide layout sweeps
(tests/viz/test_export_layout.py, tests/viz/test_slide_layout.py)."""

from __future__ import annotations

import re

TEXT_BOXES_JS = """
(svgText) => {
  document.body.style.margin = '0';
  document.body.innerHTML = svgText;
  const svg = document.querySelector('svg');
  const W = parseFloat(svg.getAttribute('width')), H = parseFloat(svg.getAttribute('height'));
  const origin = svg.getBoundingClientRect();
  const out = [];
  for (const el of svg.querySelectorAll('text')) {
    const text = el.textContent.trim();
    if (!text) continue;
    const style = getComputedStyle(el);
    if (style.display === 'none' || style.visibility === 'hidden' || parseFloat(style.opacity) === 0) continue;
    let hidden = false;
    for (let p = el; p && p !== svg; p = p.parentElement) {
      const s = getComputedStyle(p);
      if (s.display === 'none' || s.visibility === 'hidden' || parseFloat(s.opacity) === 0) { hidden = true; break; }
    }
    if (hidden) continue;
    const r = el.getBoundingClientRect();
    if (r.width === 0 && r.height === 0) continue;
    const cls = [];
    for (let p = el; p && p !== svg; p = p.parentElement) {
      if (p.getAttribute('class')) cls.push(p.getAttribute('class'));
    }
    out.push({text, x0: r.left - origin.left, y0: r.top - origin.top, x1: r.right - origin.left,
              y1: r.bottom - origin.top, size: parseFloat(style.fontSize), classes: cls.join(' '), W, H});
  }
  return out;
}
"""


#: an embedded image's pixels (a heatmap is drawn as one: plotly's SVG holds it as a base64 PNG)
PIXELS = re.compile(r'(<image\b[^>]*?\bhref=")data:[^"]*"')


def without_pixels(svg: bytes | str) -> str:
    """The SVG with every embedded image's pixels left out and the image kept: an ``<image>`` is laid out by its x,
    y, width and height alone, so every text and image lands where it did. A 512-token export holds megabytes of
    them, which chromium would decode for nothing: the layout sweep's 60 MB of SVG cost it about 0.4 core-seconds a
    megabyte more (2026-12-07)."""
    return PIXELS.sub(r'\1"', svg.decode() if isinstance(svg, bytes) else svg)


def text_boxes(page, svg: bytes | str) -> list[dict]:
    """Every visible ``<text>`` of an SVG as laid out by chromium: its text, box (x0, y0, x1, y1 in SVG pixels),
    font size, the classes of it and its ancestors, and the image's width W and height H."""
    return page.evaluate(TEXT_BOXES_JS, without_pixels(svg))


def outside(boxes: list[dict], tolerance: float = 1.0) -> list[dict]:
    """The text boxes that are not wholly inside the image."""
    return [
        b
        for b in boxes
        if b["x0"] < -tolerance or b["y0"] < -tolerance or b["x1"] > b["W"] + tolerance or b["y1"] > b["H"] + tolerance
    ]


def is_tick(box: dict) -> bool:
    """Whether a text is an axis's tick label (of any subplot)."""
    return bool(re.fullmatch(r"[xy]\d*tick", text_group(box)))


def text_group(box: dict) -> str:
    """Which part of a plotly figure a text belongs to: the title, an axis title, an axis's ticks (by subplot),
    a legend, a colour bar, an annotation, or data labels."""
    classes = box["classes"].split()
    for marker in ("g-gtitle", "legend", "colorbar", "annotation", "textpoint"):
        if any(c.startswith(marker) for c in classes):
            return marker
    for c in classes:
        if c.startswith("g-") and c.endswith("title"):
            return c  # g-xtitle, g-x2title, ...
    for c in classes:
        if re.fullmatch(r"[xy]\d*tick", c):  # xtick, ytick, x2tick, y3tick, ...
            return c
    return "other"


def _slanted(box: dict) -> bool:
    """A label set at a slant (neither flat nor upright): its bounding box is no measure of where its glyphs are."""
    w, h = box["x1"] - box["x0"], box["y1"] - box["y0"]
    return len(box["text"]) >= 4 and min(w, h) > 0.55 * max(w, h)


def overlaps(boxes: list[dict], slack: float = 1.0, same: bool = False) -> list[tuple[dict, dict]]:
    """Pairs of texts from different groups whose boxes overlap by more than ``slack`` px both ways (ticks of
    one axis may touch each other: plotly turns them to avoid that); ``same``: pairs of tick labels of the same
    axis instead (flat or upright ones) — labels the figure set (tokens thinned to a budget) that plotly neither turns
    nor drops."""
    found = []
    groups = [text_group(b) for b in boxes]
    for i, a in enumerate(boxes):
        for j in range(i + 1, len(boxes)):
            b = boxes[j]
            if (groups[i] == groups[j]) != same or (same and (not is_tick(a) or _slanted(a) or _slanted(b))):
                continue
            dx = min(a["x1"], b["x1"]) - max(a["x0"], b["x0"])
            dy = min(a["y1"], b["y1"]) - max(a["y0"], b["y0"])
            if dx > slack and dy > slack:
                found.append((a, b))
    return found


DATA_BOXES_JS = """
(svgText) => {
  document.body.style.margin = '0';
  document.body.innerHTML = svgText;
  const svg = document.querySelector('svg');
  const origin = svg.getBoundingClientRect();
  return Array.from(svg.querySelectorAll('.heatmaplayer image, .hm image')).map((el) => {
    const r = el.getBoundingClientRect();
    return {x0: r.left - origin.left, y0: r.top - origin.top, x1: r.right - origin.left, y1: r.bottom - origin.top};
  }).filter((b) => b.x1 > b.x0 && b.y1 > b.y0);
}
"""


def data_boxes(page, svg: bytes | str) -> list[dict]:
    """The boxes of an SVG's heatmap images (where the data is drawn), in SVG pixels."""
    return page.evaluate(DATA_BOXES_JS, without_pixels(svg))


def over_data(boxes: list[dict], data: list[dict], groups=("g-gtitle", "legend", "colorbar", "caption")) -> list:
    """Texts of the given groups (titles, legends, colour bars, the caption band) that lie over drawn data."""
    found = []
    for b in boxes:
        group = "caption" if "caption-band" in b["classes"] else text_group(b)
        if group not in groups:
            continue
        for d in data:
            if min(b["x1"], d["x1"]) - max(b["x0"], d["x0"]) > 1 and min(b["y1"], d["y1"]) - max(b["y0"], d["y0"]) > 1:
                found.append((b, d))
                break
    return found
