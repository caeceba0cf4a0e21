from __future__ import annotations

import json
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

APP = Path(__file__).resolve().parents[2] / "app.py"
PAGES = [
    "viz/pages/start.py",
    "viz/pages/tokens.py",
    "viz/pages/attention.py",
    "viz/pages/head_view.py",
    "viz/pages/overview.py",
    "viz/pages/compare.py",
    "viz/pages/metrics.py",
    "viz/pages/find.py",
    "viz/pages/next_token.py",
    "viz/pages/qkv.py",
    "viz/pages/block.py",
    "viz/pages/animate.py",
    "viz/pages/rollout.py",
    "viz/pages/mixing.py",
    "viz/pages/causes.py",
    "viz/pages/corpus.py",
    "viz/pages/masks.py",
    "viz/pages/positional.py",
    "viz/pages/lessons.py",
    "viz/pages/learn.py",
    "viz/pages/deck.py",
]


def new_app() -> AppTest:
    at = AppTest.from_file(str(APP), default_timeout=90)
    at.run()
    assert not at.exception, at.exception
    return at


def figures(at: AppTest) -> list[dict]:
    """The plotly figures on the current page, as dicts."""
    return [json.loads(el.proto.spec) for el in at.get("plotly_chart")]


def configs(at: AppTest) -> list[dict]:
    return [json.loads(el.proto.config) for el in at.get("plotly_chart")]


@pytest.fixture
def app() -> AppTest:
    return new_app()
