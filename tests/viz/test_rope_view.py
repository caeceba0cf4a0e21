"""Positional encodings → This model's encoding on a scaled RoPE: the real angles, each pair's wavelength beside the
unscaled one, and a caption that counts what the scaling changed — for the length the angles were computed for."""

from __future__ import annotations

import math

import numpy as np
import pytest

from model.io.catalog import ModelSpec
from model.rope_scaling import frequencies
from tests.model.test_rope_scaling import FIXTURES, TEXTS
from viz.figures import Theme
from viz.views import build
from viz.views.source import DirectSource


def views(kind: str, text: str) -> dict:
    src = DirectSource.for_text(ModelSpec("folder", path=str(FIXTURES / kind)), text)
    return src, {v.key.rsplit(".", 1)[-1]: v for v in build("pe.model", src, Theme())}


def test_the_wavelengths_are_the_models():
    src, shown = views("llama3", TEXTS["long"])
    cfg = src.loaded.model.cfg
    drawn = {t.name: np.asarray(t.y) for t in shown["wavelengths"].figure.data}
    real = 2 * math.pi / frequencies(cfg.rope_spec, cfg.rope_dims, cfg.rope_base)[0].double().numpy()
    assert np.allclose(drawn["this model's"], real) and "original context: 16 positions" in drawn
    angles = np.asarray(shown["angles"].figure.data[0].z, dtype=float)
    assert np.allclose(angles[5], 5 * 2 * math.pi / real, rtol=1e-5)  # the angle table is the scaled one
    assert shown["wavelengths"].caption.startswith("Llama 3's scaling: 0 of 4 pairs keep their wavelength")


@pytest.mark.parametrize(("text", "said"), [("short", "within the original 16"), ("long", "past the original 16")])
def test_a_length_dependent_scaling_says_the_length(text, said):
    src, shown = views("dynamic", TEXTS[text])
    caption = shown["wavelengths"].caption
    assert f"this text's {len(src.obs.ids)} tokens, {said}" in caption
    if text == "short":
        assert caption.startswith("dynamic NTK: all 4 pairs keep the wavelengths")
    else:
        assert "the base grows from 10,000 to" in caption


def test_an_unscaled_rope_has_no_wavelength_figure():
    from tests.hf_fixtures import FIXTURES as HF

    src = DirectSource.for_text(ModelSpec("folder", path=str(HF / "llama")), TEXTS["short"])
    assert [v.key for v in build("pe.model", src, Theme())] == ["pe.model.angles", "pe.model.curves"]
