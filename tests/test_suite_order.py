"""The order scripts/test.sh's workers take the test files in (tests/conftest.py's LONGEST_FIRST)."""

from __future__ import annotations

import pytest

from tests.conftest import LONGEST_FIRST, ROOT


def test_every_file_ranked_longest_first_exists_once():
    """A renamed or removed file would silently drop out of the ranking and run last."""
    missing = [name for name in LONGEST_FIRST if not (ROOT / name).is_file()]
    assert not missing, f"{missing}: rank the files as they are named now (tests/conftest.py)"
    assert len(set(LONGEST_FIRST)) == len(LONGEST_FIRST)


@pytest.mark.slow  # a collection in a fresh interpreter
def test_the_longest_files_are_collected_first():
    """pytest_collection_modifyitems puts the ranked files first, in their rank, each file's tests together."""
    import subprocess
    import sys

    out = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-m", "", "-p", "no:cacheprovider",
         "tests/test_readme.py", "tests/e2e/test_long.py", "tests/viz/test_export_layout.py"],
        cwd=ROOT, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    files = [line.split("::")[0] for line in out.stdout.splitlines() if "::" in line]
    order = list(dict.fromkeys(files))
    runs = [name for i, name in enumerate(files) if i == 0 or files[i - 1] != name]
    assert runs == order  # each file's tests together
    assert order == ["tests/viz/test_export_layout.py", "tests/e2e/test_long.py", "tests/test_readme.py"], order
