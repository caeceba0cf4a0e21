"""The context every page reads: the loaded model, this text's observation, the theme and the options."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import streamlit as st

from model.io.catalog import ModelSpec
from model.io.state import LoadedModel
from model.observe import Observation, Options
from viz.figures.common import Theme
from viz.views.base import Source


@dataclass
class PageContext:
    """What every page needs for this run. ``device`` is where the observation really ran."""

    spec: ModelSpec
    loaded: LoadedModel
    obs: Observation
    device: str
    theme: Theme
    hide_special: bool
    options: Options
    source: Source  # what views read (viz/views), backed by the shared caches

    @property
    def keep(self) -> np.ndarray:
        return self.obs.keep(self.hide_special)

    @property
    def tokens(self) -> list[str]:
        return self.obs.shown_tokens(self.hide_special)

    def patterns(self, layer: int | None = None) -> np.ndarray:
        """(L, H, n, n) or (H, n, n) restricted to the shown tokens (no copy when all are shown)."""
        return self.obs.shown(self.obs.patterns if layer is None else self.obs.patterns[layer], self.hide_special)

    def pattern(self, layer: int, head: int) -> np.ndarray:
        return self.patterns(layer)[head]

    @property
    def model_name(self) -> str:
        return self.loaded.name


def page_context() -> PageContext:
    """The context app.py built for this run."""
    return st.session_state["_ctx"]
