"""One call from a notebook: any view of the dashboard as a plotly figure, drawn inline by Jupyter and VS Code.

    from viz.notebook import show
    show("smollm2", "When Mary and John went to the store, John gave a drink to", "attention", layer=23, head=3)
    show("bundled", "The cat sat on the mat.", "head view", heads=[0, 1])
    show("smollm2", ioi, "patching", corrupted=ioi_corrupted)   # {"z": Figure, "resid_pre": Figure, …}

The model is a catalog name ("bundled", "minilm", "smollm2"), a file or folder path, a
:class:`model.io.catalog.ModelSpec` or an already loaded :class:`model.io.state.LoadedModel`. The views are the
dashboard's own (``viz/views``), with the same selections (``layer``, ``head``, …) and the same captions:
:func:`views` returns them with their captions and export names. No Streamlit is imported.
"""

from __future__ import annotations

from collections import OrderedDict
from pathlib import Path
from typing import Any

import plotly.graph_objects as go

from model.io.catalog import ModelSpec, load
from model.io.state import LoadedModel
from model.observe import Options, observe
from viz.figures.common import Theme
from viz.views import REGISTRY, View, build
from viz.views.source import DirectSource

#: names a notebook may use for a view, besides the registry's own keys
ALIASES = {
    "attention map": "attention",
    "head view": "headview",
    "all heads": "heads",
    "lens": "causes.lens",
    "logit lens": "causes.lens",
    "attribution": "causes.attribution",
    "dla": "causes.attribution",
    "direct logit attribution": "causes.attribution",
    "patching": "causes.patching",
    "circuit": "causes.circuit",
    "circuits": "causes.circuit",
}
NAMED = ("bundled", "minilm", "smollm2")
_models: OrderedDict[ModelSpec, LoadedModel] = OrderedDict()
_sources: OrderedDict[tuple, DirectSource] = OrderedDict()
KEEP = 4  # models (and sources) kept between calls


def spec_of(model: str | Path | ModelSpec) -> ModelSpec:
    if isinstance(model, ModelSpec):
        return model
    if str(model) in NAMED:
        return ModelSpec(str(model))
    if Path(model).exists():
        return ModelSpec("folder", path=str(model))
    raise ValueError(f"unknown model {model!r}: use one of {', '.join(NAMED)}, a checkpoint path or a ModelSpec")


def _remember(store: OrderedDict, key, make):
    if key not in store:
        store[key] = make()
        while len(store) > KEEP:
            store.popitem(last=False)
    store.move_to_end(key)
    return store[key]


def source(model: str | Path | ModelSpec | LoadedModel, text: str, options: Options | None = None) -> DirectSource:
    """The views' source for a model and a text (models and sources are kept for the next calls)."""
    options = options or Options()
    if isinstance(model, LoadedModel):
        loaded, spec = model, ModelSpec("folder", path=f"<notebook:{id(model)}>")
    else:
        spec = spec_of(model)
        loaded = _remember(_models, spec, lambda: load(spec))
    if loaded.tokenizer is None:
        raise ValueError("this model has no tokenizer: attach one first (LoadedModel.attach_tokenizer)")
    key = (spec, id(loaded), text, options)
    make = lambda: DirectSource(spec, loaded, observe(loaded.model, loaded.tokenizer, text, options), options)  # noqa: E731
    return _remember(_sources, key, make)


def view_key(name: str) -> str:
    key = ALIASES.get(name.lower(), name)
    if key not in REGISTRY:
        raise ValueError(f"unknown view {name!r}; choose from {', '.join(sorted({*REGISTRY, *ALIASES}))}")
    return key


def views(model, text: str, view: str = "attention", *, options=None, theme=None, **selection: Any) -> list[View]:
    """The view's parts as the dashboard builds them: figure, title, caption (computed from the numbers drawn)."""
    return build(view_key(view), source(model, text, options), theme or Theme(), **selection)


def show(model, text: str, view: str = "attention", *, options=None, theme=None, **selection: Any):
    """The view's figure (a dict of figures by part for a view of several parts, e.g. patching's kinds). In a
    notebook the returned figure draws itself inline; its caption is its ``layout.meta["caption"]``."""
    key = view_key(view)
    built = views(model, text, key, options=options, theme=theme, **selection)
    for v in built:
        v.figure.layout.meta = {**(v.figure.layout.meta or {}), "caption": v.caption}
    if len(built) == 1 and built[0].key == key:
        return built[0].figure
    return {v.key.removeprefix(key + "."): v.figure for v in built}


def figure_caption(fig: go.Figure) -> str:
    """The sentence the dashboard shows under this figure."""
    return (fig.layout.meta or {}).get("caption", "")
