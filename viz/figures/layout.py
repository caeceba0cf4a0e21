"""Layout edits merged as plain data and assigned per top-level key, not through plotly's update machinery.

``fig.update_layout`` / ``update_xaxes`` / ``add_shape`` run plotly's batch-update machinery: every key path is
parsed, checked against the property tree and replayed as a relayout, which took 17 ms of a 19 ms heatmap (and
most of a page's server time with a class of 30 on the server: py-spy, bench/RESULTS.md). These helpers merge
the change into the layout as plain data and assign only the top-level properties it touched (a fraction of a
millisecond each); the result is the same figure (tests/viz/test_layout.py compares them with plotly's methods).

Changes are nested dicts (``title={"text": "layer"}``), not plotly's "magic underscore" paths (``title_text``):
some property names have underscores of their own (``paper_bgcolor``).

Assigned values are stored as they are, without plotly's validators (which walk every nested property and took
half of a figure's build: 8.8 → 4.6 ms for the attention map, bench/RESULTS.md). The test suite sets
:data:`STRICT` (tests/conftest.py), so that every figure the tests build is validated at each edit as before: a
misspelt property fails there; tests/viz/test_views.py checks that every view (and slide) makes the same JSON
both ways, tests/viz/test_layout.py what validation would have changed (None, empty properties, colour scales).
"""

from __future__ import annotations

import re
from typing import Any

import plotly.graph_objects as go
import plotly.io as pio
from _plotly_utils.basevalidators import ColorscaleValidator
from plotly.subplots import make_subplots

__all__ = [
    "add_annotations",
    "add_shapes",
    "figure",
    "held",
    "prop",
    "relayout",
    "subplots",
    "update_annotations",
    "update_axes",
    "update_trace",
]

_COLORSCALE = ColorscaleValidator("colorscale", "layout.coloraxis")

#: validate every edit with plotly's validators (the tests); off, values are stored as given (the app)
STRICT = False


def _assign(fig: go.Figure, key: str, value: Any) -> None:
    """``fig.layout[key] = value``, validated only when :data:`STRICT` (the template always, on a figure that
    validates: plotly resolves its name to the template's layout)."""
    layout = fig.layout
    if STRICT or (key == "template" and layout._validate):
        layout[key] = value
        return
    if key == "template" and isinstance(value, str):  # a template's name: its layout, as validation resolves it
        value = pio.templates[value].to_plotly_json()
    _store(layout, key, value)


def _store(obj: Any, key: str, value: Any) -> None:
    """``obj[key] = value`` for a figure's layout or trace as plotly's unvalidated path does it: into the plain
    dict the figure keeps, its cached property objects dropped (rebuilt from the dict when read)."""
    value = _as_plotly(value)
    props = obj._props
    if _unset(value):  # as plotly does: the property is removed
        props.pop(key, None)
    else:
        props[key] = value
    obj._compound_props.pop(key, None)
    obj._compound_array_props.pop(key, None)


def update_trace(trace: Any, patch: dict[str, Any]) -> None:
    """``trace.update(patch)`` for a trace of a figure (``fig.data[i]``), merged as :func:`relayout` merges."""
    if STRICT:
        trace.update(patch)
        return
    props = trace._props
    for key, change in patch.items():
        now = props.get(key)
        _store(trace, key, _merge(_copy(now), change) if isinstance(change, dict) and isinstance(now, dict) else change)


def _unset(value: Any) -> bool:
    return value is None or (isinstance(value, dict) and not value)


def _as_plotly(value: Any) -> Any:
    """What plotly's validators would store of a plain value: None and empty properties dropped, colour scales
    named by plotly.py ("RdBu_r", which plotly.js does not know) spelt out."""
    if isinstance(value, list):
        return [_as_plotly(v) for v in value]
    if not isinstance(value, dict):
        return value
    out = {k: v for k, v in ((k, _as_plotly(v)) for k, v in value.items()) if not _unset(v)}
    if isinstance(out.get("colorscale"), str):
        out["colorscale"] = _COLORSCALE.validate_coerce(out["colorscale"])
    return out


def _merge(base: dict[str, Any], patch: dict[str, Any]) -> dict[str, Any]:
    """Merge ``patch`` into ``base`` as plotly's update does: dicts recursively, anything else replaced."""
    for key, value in patch.items():
        if isinstance(value, dict) and isinstance(base.get(key), dict):
            _merge(base[key], value)
        else:
            base[key] = _copy(value)
    return base


def _copy(value: Any) -> Any:
    return {k: _copy(v) for k, v in value.items()} if isinstance(value, dict) else value


def held(fig: go.Figure) -> dict[str, Any]:
    """The figure's layout as the plain dict plotly keeps, to read (``fig.layout.to_plotly_json()`` without the
    deep copy of everything it holds; never change it in place)."""
    return fig.layout._props


def prop(fig: go.Figure, *path: str, default: Any = None) -> Any:
    """A layout property read from the dict the figure keeps: ``prop(fig, "title", "text")`` is
    ``fig.layout.title.text`` without building plotly's property objects on the way (``default`` when unset)."""
    value: Any = held(fig)
    for key in path:
        if not isinstance(value, dict):
            return default
        value = value.get(key)
    return default if value is None else value


def _apply(fig: go.Figure, changes: dict[str, Any], layout: dict[str, Any]) -> go.Figure:
    """Merge ``{top-level layout key: change}`` into a copy of the figure's ``layout`` and assign those keys."""
    for key, change in changes.items():
        merged = _merge(_copy(layout.get(key)) or {}, change) if isinstance(change, dict) else _copy(change)
        _assign(fig, key, merged)
    return fig


def _axis_keys(fig: go.Figure, layout: dict[str, Any], axis: str, row: int | None, col: int | None) -> list[str]:
    """Layout keys of the ``axis`` ("x" or "y") axes that ``update_xaxes(row=, col=)`` would select."""
    if axis not in ("x", "y"):
        raise ValueError('axis must be "x" or "y"')
    if row is None and col is None:
        found = [k for k in layout if re.fullmatch(rf"{axis}axis\d*", k)]
        return [f"{axis}axis", *(k for k in found if k != f"{axis}axis")]
    grid = getattr(fig, "_grid_ref", None)
    if grid is None:
        raise ValueError("row and col select subplots: this figure was not made with make_subplots")
    rows = range(len(grid)) if row is None else [row - 1]
    cols = range(len(grid[0])) if col is None else [col - 1]
    index = 0 if axis == "x" else 1
    return [grid[r][c][0].layout_keys[index] for r in rows for c in cols if grid[r][c]]


def relayout(
    fig: go.Figure, patch: dict[str, Any] | None = None, *, axes: dict[str, Any] | None = None, **props: Any
) -> go.Figure:
    """``fig.update_layout(patch, **props)``; ``axes`` is merged into every x and y axis as well
    (``update_xaxes(axes)`` and ``update_yaxes(axes)``)."""
    layout = held(fig)
    changes = {**(patch or {}), **props}
    for key in (*_axis_keys(fig, layout, "x", None, None), *_axis_keys(fig, layout, "y", None, None)) if axes else ():
        changes[key] = _merge(_copy(axes), changes[key]) if isinstance(changes.get(key), dict) else axes
    return _apply(fig, changes, layout)


def update_axes(
    fig: go.Figure,
    axis: str,
    patch: dict[str, Any] | None = None,
    *,
    row: int | None = None,
    col: int | None = None,
    **props: Any,
) -> go.Figure:
    """``fig.update_xaxes`` (``axis="x"``) or ``update_yaxes`` (``"y"``), with the same row/col selection."""
    layout = held(fig)
    change = {**(patch or {}), **props}
    return _apply(fig, {key: change for key in _axis_keys(fig, layout, axis, row, col)}, layout)


def add_shapes(fig: go.Figure, *shapes: dict[str, Any]) -> go.Figure:
    """``fig.add_shape(**s)`` for each shape, in one assignment."""
    return _append(fig, "shapes", shapes)


def add_annotations(fig: go.Figure, *notes: dict[str, Any]) -> go.Figure:
    """``fig.add_annotation(**n)`` for each note, in one assignment."""
    return _append(fig, "annotations", notes)


def _append(fig: go.Figure, kind: str, items) -> go.Figure:
    if not items:  # plotly drops an empty list; stored as given it would stay in the JSON
        return fig
    _assign(fig, kind, [*(item.to_plotly_json() for item in fig.layout[kind]), *(_copy(i) for i in items)])
    return fig


def update_annotations(fig: go.Figure, patch: dict[str, Any]) -> go.Figure:
    """``fig.update_annotations(patch)``: ``patch`` merged into every annotation (e.g. subplot titles)."""
    _assign(fig, "annotations", [_merge(note.to_plotly_json(), patch) for note in fig.layout["annotations"]])
    return fig


def figure(data: Any = None, layout: dict[str, Any] | None = None) -> go.Figure:
    """``go.Figure`` with the empty template from the start (:func:`style` sets it anyway): the default
    template is a large layout that every later edit would copy."""
    if STRICT:
        return go.Figure(data, layout={"template": "none", **(layout or {})})
    layout = _as_plotly({"template": pio.templates["none"].to_plotly_json(), **(layout or {})})
    return go.Figure(data, layout=layout, _validate=False)


def subplots(**kwargs: Any) -> go.Figure:
    """``make_subplots(**kwargs)`` on a :func:`figure`."""
    return make_subplots(figure=figure(), **kwargs)
