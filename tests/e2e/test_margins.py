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


OVERPRINTED = """() => Array.from(document.querySelectorAll('.js-plotly-plot')).flatMap(g => {
  const title = (g.layout.title || {}).text || '';
  return ['xtick', 'ytick'].flatMap(kind => {
    const boxes = Array.from(g.querySelectorAll(`g.${kind} text`)).map(t => [t.textContent, t.getBoundingClientRect()])
      .filter(([, b]) => b.width > 0);
    const out = [];
    for (let i = 0; i < boxes.length; i++) for (let j = i + 1; j < boxes.length; j++) {
      const [a, p] = boxes[i], [b, q] = boxes[j];
      const w = Math.min(p.right, q.right) - Math.max(p.left, q.left);
      const h = Math.min(p.bottom, q.bottom) - Math.max(p.top, q.top);
      if (w > 1 && h > 1) out.push(`${title.slice(0, 30)}: ${kind} ${a} over ${b}`);
    }
    return out;
  });
})"""


def test_on_a_phone_no_label_overprints_another(server, browser):
    """At 390 × 844 the Attention map's charts are a third of a desktop's width: their token labels stand upright
    rather than run into each other, and nothing is wider than the phone."""
    from scripts.browser import wait_idle

    context = browser.new_context(viewport={"width": 390, "height": 844}, has_touch=True, is_mobile=True)
    page = context.new_page()
    try:
        page.goto(server)
        wait_idle(page)
        page.locator(".js-plotly-plot").first.wait_for(timeout=60_000)
        page.wait_for_timeout(500)
        assert page.locator(".js-plotly-plot").count() >= 3
        assert page.evaluate(OVERPRINTED) == []
        assert page.evaluate("document.documentElement.scrollWidth") <= 390
    finally:
        context.close()
