"""The view registry: one function per view, returning its figure(s); titles and export names derived here.

    @view("attention", page="attention")
    def attention(src, theme, *, layer=0, head=0, mode="weights"): ...

    build("attention", src, theme, layer=1, head=3)  # -> [View(key, figure, title, name)]

Every keyword a view function takes is a *selection*; the export name is made of the model's name, the view
key, every selection value, the text, the options and the style, so two different figures never share a name.
No Streamlit here: the app, the export pack, the CLI, the benchmark and the tests build views the same way.
"""

from __future__ import annotations

import html
import inspect
import re
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np
import plotly.graph_objects as go

from model.analysis.circuits import Circuit
from model.analysis.find import Found
from model.analysis.gradients import Attribution
from model.analysis.kinds import HeadKinds
from model.analysis.lens import Lens, LogitAttribution
from model.analysis.mixing import Mixing
from model.analysis.needle import NeedleGrid
from model.analysis.patching import Metric, Patching
from model.analysis.steps import HeadSteps
from model.analysis.stream import Stream
from model.experiments import Prediction
from model.generate import Step
from model.io.catalog import ModelSpec
from model.io.state import LoadedModel
from model.long import LongObservation
from model.observe import Observation, Options
from model.profile.store import Profile
from viz.figures.common import DEFAULT_THEME, Theme, label_named, safe_filename
from viz.figures.layout import prop
from viz.views.finite import check_selection, checked_caption, mark_figure

MAX_NAME = 140
BLOCK_MEANS = re.compile(r", shown as \d+ × \d+ block means$")  # the screen's resolution, not the view's
NAMED = re.compile(r"“([^”]{1,40})”")  # a token a caption names, as captions quote them


class Source(Protocol):
    """What views read: the model, this text's observation, and experiments (cached in the app)."""

    spec: ModelSpec
    loaded: LoadedModel
    obs: Observation
    options: Options
    hide_special: bool
    long: LongObservation | None  # the whole text read by model/long.py, when it is longer than obs (else None)

    def other(
        self, *, text: str | None = None, options: Options | None = None, spec: ModelSpec | None = None
    ) -> tuple[Observation, LoadedModel]: ...
    def full(self) -> Observation: ...  # obs, or the same text with every attention kind captured
    def metrics(  # head metrics of this text on another model or with other options
        self, *, spec: ModelSpec | None = None, options: Options | None = None
    ) -> dict[str, np.ndarray]: ...
    def similarity(self) -> tuple[np.ndarray, list[tuple[int, int]], np.ndarray]: ...
    def flow(self) -> np.ndarray: ...
    def flow_token(self, token: int) -> np.ndarray: ...  # (L, N): one token's attention flow after every layer
    def mixing(self, value_zeroing: bool) -> Mixing: ...  # norm-based, ALTI, value zeroing per layer
    def attribution(self, position: int, target: str) -> Attribution: ...  # gradients of one output
    def profile(self, path: str) -> Profile | None: ...  # a stored corpus profile (model/profile), or None
    def permutation(self, seed: int, positions: bool, layer: int) -> dict[str, np.ndarray]: ...
    def padded(self, text_b: str, layer: int) -> dict[str, np.ndarray]: ...
    def predictions(self, ids: tuple[int, ...], positions: tuple[int, ...], ablate: tuple) -> list[Prediction]: ...
    def scaling(self) -> dict[str, np.ndarray]: ...
    def steps(self, layer: int, head: int) -> tuple[HeadSteps, dict[str, np.ndarray]]: ...
    def next_tokens(self, temperature: float) -> list[list[tuple[str, float]]]: ...
    def generation(self, n_new: int, temperature: float, seed: int) -> list[Step]: ...
    def induction(self, period: int, seed: int) -> dict: ...
    def stream(self, spec: ModelSpec | None = None) -> tuple[Stream, Observation]: ...  # the residual stream's norms
    def kinds(self, spec: ModelSpec | None = None, pair=None) -> HeadKinds: ...  # each head's kind on this text
    def long_found(self, relation: str, queries: tuple[int, ...], keys: tuple[int, ...]) -> Found: ...  # read whole
    def lens(self, positions: tuple[int, ...], target: int | None) -> Lens: ...  # the logit lens at positions
    def logit_attribution(self, target: int, foil: int | None, position: int) -> LogitAttribution: ...
    def patching(
        self, corrupted: tuple[int, ...], metric: Metric, kinds: tuple[str, ...], progress=None
    ) -> Patching: ...
    def patching_kept(self, corrupted: tuple[int, ...], metric: Metric, kinds: tuple[str, ...]) -> Patching | None: ...
    def attribution_patching(self, corrupted: tuple[int, ...], metric: Metric, kinds: tuple[str, ...]) -> Patching: ...
    def path_patching(self, corrupted: tuple[int, ...], metric: Metric, receivers, progress=None) -> Patching: ...
    def circuit(self, layer: int, head: int, embedding: str | None = None) -> Circuit: ...  # a head's circuit card
    def composition(self, layer: int, head: int, mode: str) -> np.ndarray: ...  # (layer, H): what it reads
    def needle(self, lengths: tuple[int, ...], depths: tuple[int, ...]) -> NeedleGrid: ...  # needle runs


@dataclass(frozen=True)
class Captioned:
    """A figure with the sentence that says what it shows, computed from the numbers it draws (a view function
    may return one, or a dict of them, instead of a bare figure)."""

    figure: go.Figure
    caption: str


class ViewUnavailableError(ValueError):
    """This view cannot be drawn for this model or text (the message says why and what to do)."""


@dataclass(frozen=True)
class View:
    key: str  # registry key, with a part suffix for views of several figures ("compare.A")
    figure: go.Figure  # as drawn on screen
    title: str
    name: str  # export file stem
    exact_figure: Callable[[], go.Figure] | None = None  # rebuilds at full resolution when the screen's is lower
    caption: str = ""  # plain text computed from the figure's numbers (pages show it under the figure)
    restyle: Callable[[Theme], go.Figure] | None = None  # the same view, same selection, in another theme
    theme: Theme = DEFAULT_THEME  # the theme it was drawn in
    selection: dict[str, Any] = field(default_factory=dict)  # every keyword it was built with

    def exact(self) -> go.Figure:
        """The figure for exports: at full resolution (the screen's may be block means for long texts)."""
        return self.exact_figure() if self.exact_figure is not None else self.figure

    def slide(self, band: int = 0, window: tuple[int, int] | None = None) -> go.Figure:
        """The same view laid out in a slide's box (the presentation sizes, shown at 1.6×: ticks 44.8 px and
        titles 48 px at 1920 × 1080), ``band`` px (layout units) left free at the bottom for the caption;
        ``window``: token maps show only those tokens (start, stop)."""
        if self.restyle is None:
            return self.exact()
        return self.restyle(self.theme.for_slide(band, window))


@dataclass(frozen=True)
class Spec:
    key: str
    page: str  # url path of the page that shows it
    build: Callable[..., go.Figure | Captioned | dict[str, go.Figure | Captioned]]

    @property
    def selection(self) -> dict[str, Any]:
        """The view's selection keywords with their defaults."""
        params = inspect.signature(self.build).parameters.values()
        return {p.name: p.default for p in params if p.kind is p.KEYWORD_ONLY}


REGISTRY: dict[str, Spec] = {}


def view(key: str, *, page: str):
    """Register a view function ``fn(src, theme, *, selection...) -> Figure | Captioned | {part: either}``."""

    def register(fn):
        if key in REGISTRY:
            raise ValueError(f"view {key!r} is registered twice")
        REGISTRY[key] = Spec(key, page, fn)
        return fn

    return register


def text_tag(text: str) -> str:
    """A short, stable tag for a text: its first two words and a checksum ("the-cat-5c1e0a")."""
    words = "-".join("".join(c for c in w if c.isalnum()) for w in text.lower().split()[:2]).strip("-")
    return f"{words[:16]}-{zlib.crc32(text.encode('utf-8', 'replace')):08x}"[-24:].lstrip("-")


def _part(key: str, value: Any) -> str:
    if isinstance(value, bool):
        return f"{key}-{'on' if value else 'off'}"
    if key in ("layer", "head") and isinstance(value, int):
        return f"{key[0].upper()}{value}"
    if isinstance(value, tuple | list):
        flat = "-".join(str(v) if not isinstance(v, tuple | list) else "x".join(map(str, v)) for v in value)
        return f"{key}-{flat or 'none'}"
    if isinstance(value, str) and len(value) > 24:
        return f"{key}-{text_tag(value)}"
    if isinstance(value, float):
        return f"{key}-{value:g}"
    return f"{key}-{value}"


def model_tag(name: str, limit: int = 40) -> str:
    """A model's name in a file name: whole up to ``limit`` characters, else its start and a checksum of the whole
    (a run trained here is named by its whole spec, which left no room for the view's own key)."""
    if len(name) <= limit:
        return name
    return f"{name[: limit - 9].rstrip()}-{zlib.crc32(name.encode('utf-8', 'replace')):08x}"


def export_name(src: Source, theme: Theme, key: str, selection: dict[str, Any], room: int = 0) -> str:
    """The file stem for a view: model, view, selection, text and every option that changes the figure; at most
    MAX_NAME − ``room`` characters (room for a part's suffix, "_resid_pre")."""
    options = src.options
    flags = [
        {None: "", True: "causal", False: "bidirectional"}[options.causal],
        "" if options.scale else "unscaled",
        "no-special" if src.hide_special else "",
        "presentation" if theme.presentation else "",
        "dark" if theme.dark else "",
        "" if theme.colorscale == "Viridis" else theme.colorscale.lower(),
        "" if theme.positions == "duplicates" else f"positions-{theme.positions}",
    ]
    chosen = {k: v for k, v in selection.items() if not (k in ("query", "key") and v == -1)}  # -1: no focus
    parts = [model_tag(src.loaded.name), key.replace(".", "-"), *(_part(k, v) for k, v in chosen.items())]
    name = safe_filename(*parts, text_tag(src.obs.text), *flags, limit=10_000)
    limit = MAX_NAME - room
    if len(name) > limit:  # keep names unique when they must be cut: end with a checksum of the whole
        name = f"{name[: limit - 9]}-{zlib.crc32(name.encode()):08x}"
    return name


def build(key: str, src: Source, theme: Theme, /, **selection: Any) -> list[View]:
    """Build a view with the given selection (unknown keywords refused, missing ones take their defaults)."""
    spec = REGISTRY.get(key)
    if spec is None:
        raise ValueError(f"unknown view {key!r}; choose from {', '.join(sorted(REGISTRY))}")
    full = spec.selection
    unknown = set(selection) - set(full)
    if unknown:
        raise ValueError(f"view {key!r} takes no {', '.join(sorted(unknown))}; it takes {', '.join(full) or 'nothing'}")
    full.update(selection)
    warnings = list(getattr(src.loaded, "warnings", []))
    if (message := check_selection(src.obs, warnings, full)) is not None:
        raise ViewUnavailableError(message)
    figures = _parts(spec.build(src, theme, **full))
    for fig, _ in figures.values():
        mark_figure(fig)
    figures = {p: (fig, checked_caption(caption, warnings)) for p, (fig, caption) in figures.items()}
    name = export_name(src, theme, key, full, room=max((len(p) + 1 for p in figures if p), default=0))
    views = []
    for part, (fig, caption) in figures.items():
        title = html.unescape(prop(fig, "title", "text", default=key).replace("<br>", " "))
        title = BLOCK_MEANS.sub("", title.removesuffix(" (block means)"))

        def restyle(other: Theme, part=part) -> go.Figure:
            fig = _parts(spec.build(src, other, **full))[part][0]
            mark_figure(fig)
            return fig

        # rebuilt for a file (exact, no click targets) only when one is asked for
        exact = (lambda restyle=restyle: restyle(theme.for_export())) if theme.for_export() != theme else None
        part_key, part_name = (f"{key}.{part}", f"{name}_{part}") if part else (key, name)
        views.append(View(part_key, fig, title, part_name, exact, caption, restyle, theme, dict(full)))
    return views


def _parts(out) -> dict[str, tuple[go.Figure, str]]:
    """{part: (figure, caption)} from what a view function returned; thinned token axes label the tokens the
    caption names (“animal”), so that a figure never drops the token its takeaway is about."""
    items = out.items() if isinstance(out, dict) else [("", out)]
    parts = {p: (f.figure, f.caption) if isinstance(f, Captioned) else (f, "") for p, f in items}
    for fig, caption in parts.values():
        label_named(fig, set(NAMED.findall(caption)))
    return parts


def page_views(page: str) -> list[str]:
    """The keys of the views a page shows, in registration order."""
    return [k for k, s in REGISTRY.items() if s.page == page]
