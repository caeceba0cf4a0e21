"""In chromium, single-panel heatmaps are drawn once: their margins, fitted to the labels on the server
(viz/figures/margins.py), already hold every tick label, title and colour bar, so plotly's automargin never
widens them and draws the figure a second time (half of a 512-token map's drawing time). Figures of several
panels are left to automargin."""

from __future__ import annotations

import pytest

from scripts.browser import open_page, type_text

pytestmark = pytest.mark.e2e

GROWN = """() => Array.from(document.querySelectorAll('.js-plotly-plot'))
  .filter(g => g._fullData.some(t => t.type === 'heatmap') && !g._fullLayout.xaxis2)
  .map(g => {
    const m = g.layout.margin || {}, s = g._fullLayout._size;
    return [(g.layout.title || {}).text || '', ['l', 'r', 't', 'b'].filter(k => s[k] > (m[k] ?? 80) + 1)
      .map(k => `${k}: ${m[k]} → ${Math.round(s[k])}`)];
  })"""
PAGES = [("", "Attention map"), ("compare", "Compare"), ("metrics", "Head metrics"), ("rollout", "Rollout and flow")]


@pytest.mark.parametrize("words", [0, 40])  # the default sentence; 40 more words: labels stand upright
def test_heatmaps_fit_their_labels_before_the_browser_measures_them(page, server, words):
    if words:
        type_text(page, " ".join(["because", "the", "animal", "was", "tired,", "it"] * (words // 6 + 1))[:400])
    seen = 0
    for path, title in PAGES:
        open_page(page, server, path, title)
        for name, grown in page.evaluate(GROWN):
            seen += 1
            assert not grown, (title, name, grown)
    assert seen >= 5
