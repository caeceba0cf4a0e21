"""Margins fitted to labels on the server (viz/figures/margins.py): widths, which sides grow, the angle rule.
That the browser then draws a heatmap once (no automargin redraw) is checked in chromium: tests/e2e/test_margins.py."""

from __future__ import annotations

import numpy as np
import pytest

from viz.figures.heatmaps import attention_heatmap
from viz.figures.margins import LABEL_PAD, _tick_texts, prefit, text_width


def test_text_width_reads_dejavu_widths_and_plotlys_html():
    assert text_width("0", 10) == pytest.approx(6.36)  # DejaVu Sans' digits: 0.636 em
    assert text_width("W", 12) > text_width("i", 12) * 3
    assert text_width("a&lt;b", 12) == pytest.approx(text_width("a<b", 12))  # entities read as their character
    assert text_width("<b>cat</b>", 12) == pytest.approx(text_width("cat", 12))  # tags take no room
    assert text_width("it\u200b\u200b", 12) == pytest.approx(text_width("it", 12))  # zero-width suffixes
    assert text_width("日本", 10) == pytest.approx(20.0)  # a character DejaVu lacks: 1 em, the widest
    assert text_width("short<br>a longer line", 12) == pytest.approx(text_width("a longer line", 12))


def test_margins_fit_the_longest_label_and_never_shrink():
    tokens = ["the", "antidisestablishmentarianism", "cat"]
    fig = attention_heatmap(np.full((3, 3), 1 / 3), tokens, title="L0H0")
    widest = text_width("antidisestablishmentarianism", fig.layout.yaxis.tickfont.size)
    assert fig.layout.margin.l >= widest + LABEL_PAD
    short = attention_heatmap(np.full((3, 3), 1 / 3), ["a", "b", "c"], title="L0H0")
    assert short.layout.margin.l < fig.layout.margin.l
    before = fig.layout.margin.l
    fig.layout.margin.l = before + 50  # wider already: kept
    assert prefit(fig).layout.margin.l == before + 50


def test_token_axes_lie_flat_when_they_fit_a_narrow_plot_and_stand_upright_when_crowded():
    few = attention_heatmap(np.full((3, 3), 1 / 3), ["a", "b", "c"])
    many = attention_heatmap(np.full((40, 40), 1 / 40), [f"token{i}" for i in range(40)])
    assert few.layout.xaxis.tickangle == 0 and many.layout.xaxis.tickangle == -90
    assert many.layout.margin.b > few.layout.margin.b
    assert few.data[0].colorbar.x == 1.0  # a colour bar at the plot's edge: its room does not depend on the width


def test_colour_bar_labels_cover_plotlys_steps():
    """For a range of weights, the candidate labels include the steps plotly picks (0.002 for 0–0.0123)."""
    assert "0.002" in _tick_texts((0.0, 0.0123))
    assert any(t.startswith("−") for t in _tick_texts((-0.4, 0.4)))
    assert _tick_texts(None)  # unknown range: a generous label


def test_a_difference_map_keeps_its_colour_bar_where_its_margin_was_fitted():
    """Its bar is retitled after the margins are fitted: the place they were fitted for must stay."""
    from viz.figures import difference_heatmap

    rng = np.random.default_rng(0)
    a, b = rng.random((6, 6)), rng.random((6, 6))
    fig = difference_heatmap(a, b, [f"t{i}" for i in range(6)], title="A − B")
    (bar,) = [t.colorbar for t in fig.data if t.name == "scores"]
    assert (bar.title.text, bar.x, bar.xanchor, bar.xpad) == ("A − B", 1.0, "left", 24)
