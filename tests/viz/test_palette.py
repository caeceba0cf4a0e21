"""Head colours stay apart for every reader: the colour difference (CIEDE2000, checked against Sharma, Wu & Dalal's
published pairs) between any two heads, as seen with typical vision and simulated protanopia, deuteranopia and
tritanopia (Machado et al. 2009), and the contrast of every chip's label (WCAG 2)."""

from __future__ import annotations

import numpy as np
import pytest

from viz.figures.common import Theme
from viz.figures.headview import HEAD_COLOURS, head_view_data
from viz.figures.palette import CVD, ciede2000, contrast, min_distance, simulate, text_on

#: (Lab 1, Lab 2, ΔE00) from Sharma, Wu & Dalal (2005), table 1
SHARMA = [
    ((50.0, 2.6772, -79.7751), (50.0, 0.0, -82.7485), 2.0425),
    ((50.0, 0.0, 0.0), (50.0, -1.0, 2.0), 2.3669),
    ((50.0, 2.5, 0.0), (73.0, 25.0, -18.0), 27.1492),
    ((60.2574, -34.0099, 36.2677), (60.4626, -34.1751, 39.4387), 1.2644),
    ((22.7233, 20.0904, -46.6940), (23.0331, 14.9730, -42.5619), 2.0373),
    ((90.8027, -2.0831, 1.4410), (91.1528, -1.6435, 0.0447), 1.4441),
]


@pytest.mark.parametrize(("a", "b", "expected"), SHARMA)
def test_ciede2000_matches_the_published_pairs(a, b, expected):
    assert float(ciede2000(np.array(a), np.array(b))) == pytest.approx(expected, abs=1e-4)


def test_the_simulation_is_machados():
    """A colour of pure grey is seen the same; a red and a green look alike with deuteranopia, not to others."""
    grey = np.array([0.5, 0.5, 0.5])
    for kind in CVD:
        assert np.allclose(simulate(grey, kind), grey, atol=2e-3)
    assert min_distance(["#D55E00", "#009E73"], "deuteranopia") < min_distance(["#D55E00", "#009E73"])


@pytest.mark.parametrize("vision", [None, *CVD])
def test_any_two_heads_stay_apart(vision):
    assert min_distance(list(HEAD_COLOURS), vision) >= 12.0  # 2.1 with the Okabe–Ito set under deuteranopia


def test_every_chip_label_is_readable():
    data = head_view_data(np.full((12, 3, 3), 1 / 3), ["a", "b", "c"], list(range(12)), 0.01, Theme())
    for head in data["heads"]:
        assert contrast(head["text"], head["colour"]) >= 4.5, head["colour"]
        assert head["text"] == text_on(head["colour"])
