"""One call from a notebook: any view of the dashboard as a plotly figure, drawn inline by Jupyter and VS Code.

    from viz.notebook import show
    show("smollm2", "When Mary and John went to the store, John gave a drink to", "attention", layer=23, head=3)
    show("bundled", "The cat sat on the mat.", "head view", heads=[0, 1])   # the static figure
    head_view("bundled", "The cat sat on the mat.", layer=2)   # the interactive one: hover, toggle, threshold
    show("smollm2", ioi, "patching", corrupted=ioi_corrupted)   # {"z": Figure, "resid_pre": Figure, …}

The model is a catalog name ("bundled", "minilm", "smollm2"), a file or folder path, a
:class:`model.io.catalog.ModelSpec` or an already loaded :class:`model.io.state.LoadedModel`. The views are the
dashboard's own (``viz/views``), with the same selections (``layer``, ``head``, …) and the same captions:
:func:`views` returns them with their captions and export names. No Streamlit is imported.
"""

from __future__ import annotations

import html
import json
import uuid
from collections import OrderedDict
from pathlib import Path
from typing import Any

import plotly.graph_objects as go

from model.io.catalog import ModelSpec, load
from model.io.state import LoadedModel
from model.observe import Options, observe
from viz.figures.common import Theme
from viz.figures.headview import head_view_data
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
    "activation patching": "causes.patching",
    "attribution patching": "causes.attribution_patching",
    "path patching": "causes.paths",
    "circuit": "causes.circuit",
    "circuits": "causes.circuit",
    "composition": "causes.composition",
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


_plotly_js_sent = False  # plotly.js goes into a kernel's first figure; the later ones use it from the page


def figure_html(fig: go.Figure, caption: str = "") -> str:
    """A figure and its caption as one HTML fragment that draws itself offline: plotly.js inlined in the first
    figure of the kernel session (once per notebook), then reused — what survives ``nbconvert --to html``."""
    global _plotly_js_sent
    first = not _plotly_js_sent
    _plotly_js_sent = True
    body = fig.to_html(full_html=False, include_plotlyjs=first, config={"displaylogo": False})
    shown = f'<p class="al-caption" style="max-width:60em">{html.escape(caption)}</p>' if caption else ""
    return f"<div class='al-figure'>{body}{shown}</div>"


class Shown(go.Figure):
    """What :func:`show` returns for a view of one part: a plotly Figure (everything plotly offers works on it)
    that a notebook displays with its computed caption under it, as HTML that survives ``nbconvert --to html``."""

    @property
    def caption(self) -> str:
        return figure_caption(self)

    def _repr_mimebundle_(self, include=None, exclude=None, **kwargs) -> dict:
        return {"text/html": figure_html(self, self.caption), "text/plain": f"{self.layout.title.text}\n{self.caption}"}

    def _repr_html_(self) -> str:
        return figure_html(self, self.caption)

    def _ipython_display_(self) -> None:
        from IPython.display import display

        display(self._repr_mimebundle_(), raw=True)


class Parts(dict):
    """What :func:`show` returns for a view of several parts (the logit lens's grid and rank, patching's kinds): a
    dict of :class:`Shown` figures by part, displayed one under the other with their captions."""

    def _repr_mimebundle_(self, include=None, exclude=None, **kwargs) -> dict:
        page = "".join(f"<h4>{html.escape(name)}</h4>{figure_html(fig, fig.caption)}" for name, fig in self.items())
        return {"text/html": page, "text/plain": f"{len(self)} parts: {', '.join(self)}"}

    def _ipython_display_(self) -> None:
        from IPython.display import display

        display(self._repr_mimebundle_(), raw=True)


def show(model, text: str, view: str = "attention", *, options=None, theme=None, **selection: Any):
    """The view's figure (:class:`Shown`, a plotly Figure with its caption) or, for a view of several parts (e.g.
    the logit lens, patching's kinds), a :class:`Parts` dict of them by part. In a notebook either draws itself
    inline with its caption under it; the caption is also ``fig.caption`` and ``layout.meta["caption"]``."""
    key = view_key(view)
    built = views(model, text, key, options=options, theme=theme, **selection)
    shown = []
    for v in built:
        fig = Shown(v.figure)
        fig.layout.meta = {**(fig.layout.meta or {}), "caption": v.caption}
        shown.append((v.key, fig))
    if len(shown) == 1 and shown[0][0] == key:
        return shown[0][1]
    return Parts((k.removeprefix(key + "."), fig) for k, fig in shown)


def figure_caption(fig: go.Figure) -> str:
    """The sentence the dashboard shows under this figure."""
    return (fig.layout.meta or {}).get("caption", "")


COMPONENTS = Path(__file__).resolve().parent / "shell" / "components"


class HeadView:
    """The dashboard's interactive head view (its own head_view.js, BertViz-style) for a notebook cell or a file:
    hover a token to isolate its lines, toggle heads, move the threshold. Nothing is fetched from the web."""

    def __init__(self, data: dict) -> None:
        self.data = data

    def _repr_html_(self) -> str:
        uid = f"al-hv-{uuid.uuid4().hex[:8]}"
        js = (COMPONENTS / "head_view.js").read_text(encoding="utf-8")
        css = (COMPONENTS / "head_view.css").read_text(encoding="utf-8")
        payload = json.dumps(self.data).replace("</", "<\\/")  # a token can never close the script
        source = json.dumps(js).replace("</", "<\\/")
        return (
            f'<style>{css}</style><div id="{uid}"></div>\n<script type="module">\n'
            f"const url = URL.createObjectURL(new Blob([{source}], {{type: 'text/javascript'}}));\n"
            "const view = await import(url);\n"
            f"view.default({{data: [{payload}], parentElement: document.getElementById('{uid}'), "
            "setStateValue: () => {}});\n</script>"
        )

    def html(self, title: str = "Head view") -> str:
        """A standalone page (save it and open it in any browser)."""
        return f"<!doctype html><meta charset='utf-8'><title>{html.escape(title)}</title>{self._repr_html_()}"


def head_view(model, text: str, layer: int = 0, heads=None, threshold: float = 0.05, *, options=None, theme=None):
    """The interactive head view of one layer (all its heads unless ``heads`` names some)."""
    src = source(model, text, options)
    obs = src.obs
    if not 0 <= layer < obs.n_layers:
        raise ValueError(f"layer {layer} does not exist; the model has {obs.n_layers}")
    chosen = list(range(obs.n_heads)) if heads is None else [int(h) for h in heads]
    return HeadView(head_view_data(obs.patterns[layer], obs.tokens, chosen, threshold, theme or Theme()))
