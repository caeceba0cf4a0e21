"""Write viz/figures/glyphs.py: DejaVu Sans advance widths (in em) of the characters figure labels use, so that
margins can be fitted to labels on the server (viz/figures/margins.py) as the browser will measure them.

    python scripts/make_glyph_widths.py [/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf]

Run once; the output is committed. Needs Pillow (python-pptx brings it) and Debian's fonts-dejavu-core.
"""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

from PIL import ImageFont

FONT = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf"
#: Latin, Latin-1, Latin Extended-A/B, Greek, Cyrillic, and the punctuation and arrows labels use
RANGES = [(0x20, 0x250), (0x370, 0x400), (0x400, 0x460), (0x2010, 0x2030), (0x2190, 0x21A0), (0x2212, 0x2213)]
BASIC = ImageFont.Layout.BASIC  # the advance widths alone: no shaping
SIZE = 1000  # px: widths read at this size, stored in em with 3 decimals


def main() -> None:
    font = ImageFont.truetype(sys.argv[1] if len(sys.argv) > 1 else FONT, SIZE, layout_engine=BASIC)
    rows = []
    for start, stop in RANGES:
        widths = [round(font.getlength(chr(c)) / SIZE, 3) for c in range(start, stop)]
        lines = textwrap.wrap(", ".join(f"{w:g}" for w in widths), 108)
        rows.append(f"    ({start:#06x}, [\n" + "\n".join(f"        {line}" for line in lines) + ",\n    ]),")
    out = Path(__file__).resolve().parent.parent / "viz" / "figures" / "glyphs.py"
    out.write_text(
        '"""DejaVu Sans advance widths in em, written by scripts/make_glyph_widths.py (do not edit): the first\n'
        'code point of each range and the widths of the characters from it on."""\n\n'
        "# fmt: off\n"
        "RANGES = [\n" + "\n".join(rows) + "\n]\n"
    )
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
