"""The fast layout edits (viz/figures/layout.py) make the same figures as plotly's own update methods."""

import json

import numpy as np
import plotly.graph_objects as go
import plotly.io as pio
import pytest
from plotly.subplots import make_subplots

from viz.figures.layout import add_annotations, add_shapes, figure, relayout, subplots, update_annotations, update_axes


def same(a: go.Figure, b: go.Figure) -> None:
    assert json.loads(pio.to_json(a, validate=False)) == json.loads(pio.to_json(b, validate=False))


def heatmap() -> go.Figure:
    return figure(go.Heatmap(z=np.arange(12.0).reshape(3, 4), x=list("abcd"), y=list("xyz")))


def test_relayout_merges_like_update_layout():
    theirs, ours = heatmap(), heatmap()
    first = {"title": {"text": "t", "font": {"size": 14}}, "margin": {"l": 12, "r": 3}, "paper_bgcolor": "#fff"}
    then = {"title": {"font": {"color": "#111"}}, "margin": {"l": 40}, "coloraxis": {"cmid": None, "cmax": 2}}
    theirs.update_layout(first).update_layout(then)
    relayout(relayout(ours, first), **then)
    same(theirs, ours)
    assert ours.layout.title.font.size == 14 and ours.layout.margin.l == 40 and ours.layout.margin.r == 3


def test_relayout_axes_reach_every_subplot():
    theirs = make_subplots(rows=1, cols=3, figure=go.Figure(layout={"template": "none"}))
    ours = subplots(rows=1, cols=3)
    axis = {"gridcolor": "#eee", "title": {"standoff": 8}}
    theirs.update_layout(height=300).update_xaxes(axis).update_yaxes(axis)
    relayout(ours, height=300, axes=axis)
    same(theirs, ours)
    assert ours.layout.xaxis3.gridcolor == "#eee" and ours.layout.yaxis2.title.standoff == 8


@pytest.mark.parametrize("where", [{}, {"row": 1, "col": 2}, {"col": 3}])
def test_update_axes_selects_like_update_xaxes(where):
    theirs = make_subplots(rows=2, cols=3, figure=go.Figure(layout={"template": "none"}))
    ours = subplots(rows=2, cols=3)
    ticks = {"type": "category", "tickvals": ["a", "b"], "ticktext": ["a", "b"], "title": {"text": "keys"}}
    theirs.update_xaxes(ticks, **where).update_yaxes(autorange="reversed", **where)
    update_axes(ours, "x", ticks, **where)
    update_axes(ours, "y", autorange="reversed", **where)
    same(theirs, ours)


def test_update_axes_on_a_single_plot_and_its_errors():
    theirs, ours = heatmap(), heatmap()
    theirs.update_yaxes(autorange="reversed", title_text="query").update_yaxes(title_font_size=9)
    update_axes(ours, "y", autorange="reversed", title={"text": "query"})
    update_axes(ours, "y", title={"font": {"size": 9}})
    same(theirs, ours)
    with pytest.raises(ValueError, match="must be"):
        update_axes(ours, "z", type="log")
    with pytest.raises(ValueError, match="make_subplots"):
        update_axes(ours, "x", row=1, col=1, type="log")


def test_shapes_annotations_and_their_update():
    theirs = make_subplots(
        rows=1, cols=2, subplot_titles=("left", "right"), figure=go.Figure(layout={"template": "none"})
    )
    ours = subplots(rows=1, cols=2, subplot_titles=("left", "right"))
    rect = {"type": "rect", "x0": 0, "x1": 1, "y0": 0, "y1": 1, "line": {"color": "#e03131", "width": 3}}
    note = {"x": 0.5, "y": 0.5, "text": "here", "showarrow": False}
    theirs.add_shape(**rect).add_shape(**{**rect, "x0": 2}).add_annotation(**note)
    theirs.update_annotations(font={"size": 13}, yshift=6)
    add_shapes(add_shapes(ours, rect), {**rect, "x0": 2})
    add_annotations(ours, note)
    update_annotations(ours, {"font": {"size": 13}, "yshift": 6})
    same(theirs, ours)
    assert [a.text for a in ours.layout.annotations] == ["left", "right", "here"]
    assert len(ours.layout.shapes) == 2


def test_unvalidated_edits_store_what_plotly_would(monkeypatch):
    """The app's edits skip plotly's validators (STRICT off): None still removes a property, a colour scale
    named by plotly.py is spelt out for plotly.js, an empty list of shapes is no change."""
    from viz.figures import layout

    def edited() -> go.Figure:
        fig = relayout(heatmap(), coloraxis={"colorscale": "RdBu_r", "cmin": 0, "cmax": 1}, title={"text": "t"})
        add_shapes(fig)
        return relayout(fig, coloraxis={"cmax": None}, title={"subtitle": {"text": None}})

    strict = edited()
    monkeypatch.setattr(layout, "STRICT", False)
    fast = edited()
    same(strict, fast)
    assert "cmax" not in fast.to_plotly_json()["layout"]["coloraxis"]
    assert fast.layout.coloraxis.colorscale[0] == (0.0, "rgb(5,48,97)")
