"""The README's promises that a file can check: its images exist and are PNGs, its two commands are first."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")


def test_every_image_the_readme_shows_exists_and_is_a_png():
    images = re.findall(r"!\[[^\]]*\]\(([^)]+)\)", README)
    assert images, "the README shows no screenshot"
    for rel in images:
        path = ROOT / rel
        assert path.is_file(), f"README shows {rel}, which does not exist (python scripts/screenshots.py)"
        assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", rel


def test_the_readme_opens_with_the_two_commands():
    first_block = re.search(r"```bash\n(.*?)```", README, re.S).group(1)
    commands = [line for line in first_block.splitlines() if line.strip() and not line.startswith("#")]
    assert len(commands) == 2
    assert "streamlit run app.py" in commands[0] and "scripts/test.sh" in commands[1]
