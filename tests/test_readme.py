"""The README's promises that a file can check: its two commands are first, and every link and image of the README
and of the reference pages in docs/ resolves (files exist, images are PNGs, anchors name a heading)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
LINK = re.compile(r"(!?)\[[^\]]*\]\(([^)\s]+)\)")


def prose(text: str) -> str:
    """The text outside code blocks (a bash comment is not a heading, a Python index is not a link)."""
    return re.sub(r"```.*?```", "", text, flags=re.S)


def anchors(path: Path) -> set[str]:
    """GitHub's anchors for the headings of a Markdown file."""
    headings = re.findall(r"^#+ (.+)$", prose(path.read_text(encoding="utf-8")), re.M)
    return {re.sub(r"[^\w\- ]", "", h.strip().lower()).replace(" ", "-") for h in headings}


def test_the_readme_opens_with_the_two_commands():
    first_block = re.search(r"```bash\n(.*?)```", README, re.S).group(1)
    commands = [line for line in first_block.splitlines() if line.strip() and not line.startswith("#")]
    assert len(commands) == 2
    assert "streamlit run app.py" in commands[0] and "scripts/test.sh" in commands[1]


def test_the_readme_stays_an_overview():
    """What the product is, the commands, how students reach a server, a screenshot, the pages, the links: the
    reference lives in docs/ (the README was 54 KB)."""
    assert len(README.encode()) < 20_000
    assert "## Teaching a class" in README and "## Documentation" in README
    linked = {target.split("#")[0] for _, target in LINK.findall(prose(README))}
    assert {f"docs/{p.name}" for p in PAGES[1:]} <= linked, "every docs/ page is linked from the README"


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_every_link_and_image_resolves(page):
    found = LINK.findall(prose(page.read_text(encoding="utf-8")))
    assert found, f"{page.name} links nowhere"
    for image, target in found:
        if target.startswith(("http://", "https://", "mailto:")):
            continue
        file, _, anchor = target.partition("#")
        path = (page.parent / file).resolve() if file else page
        assert path.exists(), f"{page.name} links {target}, which does not exist"
        if image:
            assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", f"{target} is not a PNG (scripts/screenshots.py)"
        if anchor:
            assert path.suffix == ".md" and anchor in anchors(path), f"{page.name}: no heading #{anchor} in {file}"


def test_the_readme_shows_a_screenshot():
    assert re.search(r"!\[[^\]]*\]\(assets/screenshots/[^)]+\.png\)", README)
