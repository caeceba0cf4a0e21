"""The notebook examples of the documentation run as written: every ```python block of a page, in order, in one
namespace (what a reader pasting them into Jupyter gets)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parents[1] / "docs"
PAGES = ["capture-api.md", "research.md", "watch-it-learn.md"]
FRAGMENTS = {"checkpoints.md": "starts from the reader's own trained `model` (the post's encoder)"}


def trained_once(default):
    """``model.learn.loop.train`` for the examples: a spec whose key is the default run's (the same spec trains the
    same model: the key names the run) is the run the test session trained once and stored (tests/conftest.py:
    ``default_run``, read back as the app reads a stored run); any other spec trains. Watch it learn's example
    trains the default run, which took about 45 core-seconds of a CI run a second time."""
    from model.learn import loop

    real = loop.train

    def train(spec, **kwargs):
        return default if spec.key == default.spec.key and not kwargs else real(spec, **kwargs)

    return train


def blocks(page: str) -> list[str]:
    return re.findall(r"```python\n(.*?)```", (DOCS / page).read_text(encoding="utf-8"), re.S)


def test_every_page_with_notebook_examples_is_checked():
    with_code = sorted(p.name for p in DOCS.glob("*.md") if "```python" in p.read_text(encoding="utf-8"))
    assert with_code == sorted([*PAGES, *FRAGMENTS])


@pytest.mark.slow
@pytest.mark.parametrize("page", PAGES)
def test_the_notebook_examples_run_as_written(page, capsys, request, monkeypatch):
    if page == "watch-it-learn.md":
        monkeypatch.setattr("model.learn.loop.train", trained_once(request.getfixturevalue("default_run")[0]))
    namespace: dict = {}
    for i, code in enumerate(blocks(page)):
        exec(compile(code, f"{page} block {i + 1}", "exec"), namespace)  # our own documentation
    printed = capsys.readouterr().out
    if page == "watch-it-learn.md":  # the default run forms induction heads at its phase change
        assert namespace["heads"] and min(namespace["heads"].values()) == 560
        assert namespace["change"] is not None and namespace["change"].step == 525
    if page == "research.md":  # the numbers the comments promise
        assert "6.12 -5.49" in printed and "[(23, 3), (29, 1), (23, 0)]" in printed
        assert "after layer 29 ' Mary' rank of ' Mary': 1" in printed
        assert isinstance(namespace["grids"], dict) and "z" in namespace["grids"]
        assert (
            "torch.Size([1, 9, 14, 64])" in printed and "True L23H3" in printed
        )  # the gradient at every head's output; the stream taken apart
        assert "50 14 When" in printed and "(np.int64(23), np.int64(3))" in printed  # IOI over 50 prompts: L23H3
        assert "(np.int64(23), np.int64(3)) 0.69" in printed and "True" in printed  # path patching to the logits
        assert "(np.int64(16), np.int64(0)) 3.5" in printed  # the induction head reads the previous-token head
        assert "[1, 1, 1]" in printed and "[6.12, 5.91] (np.int64(23), np.int64(3))" in printed  # padded batches
        assert "810 270" in printed  # head metrics per text and head, and their means
