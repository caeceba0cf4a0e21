"""A .pptx as LibreOffice renders it, measured: ``soffice --headless --convert-to pdf``, then every page's pictures
and text read with pdfminer — where each lies, how large its text prints in points, and the tick labels inside each
picture in points (the figure's tick size in px × the picture's printed width ÷ its width in px). What the
back-row checks of tests/viz/test_lecture.py and bench/slides.py measure."""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

SOFFICE_INSTALL = "apt-get install -y libreoffice-impress"


@dataclass
class Page:
    """One slide as printed: its size, its pictures ((x0, y0, x1, y1) pt from the bottom left, (width, height) px)
    and its text lines ((text, size pt, bbox))."""

    width: float
    height: float
    pictures: list[tuple[tuple[float, float, float, float], tuple[int, int]]] = field(default_factory=list)
    lines: list[tuple[str, float, tuple[float, float, float, float]]] = field(default_factory=list)

    def outside(self) -> list[str]:
        """What reaches past the page's edges (0.5 pt of tolerance)."""
        out = []
        for name, box in [("picture", b) for b, _ in self.pictures] + [(repr(t[:30]), b) for t, _, b in self.lines]:
            if box[0] < -0.5 or box[1] < -0.5 or box[2] > self.width + 0.5 or box[3] > self.height + 0.5:
                out.append(f"{name} at {tuple(round(v) for v in box)}")
        return out

    def tick_pt(self, tick_px: float, width_px: float = 1920) -> float:
        """How large text ``tick_px`` high in a figure ``width_px`` wide prints in the largest picture, in points
        (an animation's frames may be stored smaller than the figure was laid out: its text scales with them)."""
        box = max((b for b, _ in self.pictures), key=lambda b: (b[2] - b[0]) * (b[3] - b[1]))
        return tick_px * (box[2] - box[0]) / width_px

    def picture_share(self) -> float:
        """The largest picture's printed height as a share of the page's height."""
        return max((b[3] - b[1]) / self.height for b, _ in self.pictures) if self.pictures else 0.0


def soffice() -> str | None:
    return shutil.which("soffice") or shutil.which("libreoffice")


def to_pdf(pptx: bytes, folder: Path | None = None) -> Path:
    """The .pptx printed to PDF by LibreOffice (headless, its own profile in a temporary folder)."""
    exe = soffice()
    if exe is None:
        raise RuntimeError(f"LibreOffice is not installed: {SOFFICE_INSTALL}")
    folder = Path(folder or tempfile.mkdtemp(prefix="slides-"))
    folder.mkdir(parents=True, exist_ok=True)
    src = folder / "deck.pptx"
    src.write_bytes(pptx)
    profile = (folder / "profile").resolve().as_uri()
    command = [exe, f"-env:UserInstallation={profile}", "--headless", "--convert-to", "pdf", "--outdir", str(folder)]
    subprocess.run(
        [*command, str(src)],
        check=True,
        capture_output=True,
        timeout=300,
    )
    return folder / "deck.pdf"


def pages(pdf: Path) -> list[Page]:
    """Every page of ``pdf``: its pictures and its lines of text with their printed sizes."""
    from pdfminer.high_level import extract_pages
    from pdfminer.layout import LTChar, LTFigure, LTImage, LTTextContainer, LTTextLine

    def walk(node, page: Page) -> None:
        for child in node:
            if isinstance(child, LTImage):
                page.pictures.append((child.bbox, tuple(int(v) for v in child.srcsize)))
            elif isinstance(child, LTTextLine):
                sizes = [c.size for c in child if isinstance(c, LTChar)]
                if sizes and child.get_text().strip():
                    page.lines.append((child.get_text().strip(), min(sizes), child.bbox))
            elif isinstance(child, LTFigure | LTTextContainer):
                walk(child, page)

    out = []
    for layout in extract_pages(str(pdf)):
        out.append(Page(layout.width, layout.height))
        walk(layout, out[-1])
    return out
