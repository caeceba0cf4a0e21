"""How figures look: one Theme for colours and font sizes (the presentation theme scales them together)."""

from __future__ import annotations

from dataclasses import dataclass, replace

LABEL_POSITIONS = ("duplicates", "all", "none")


@dataclass(frozen=True)
class Sizes:
    """Font sizes in px at 1× (a 1920-px slide shows them at this size)."""

    base: int
    tick: int
    axis_title: int
    title: int
    hover: int


@dataclass(frozen=True)
class Theme:
    """How figures look. ``presentation``: sizes a back row can read (ticks ≥ 18 px); ``positions``: which
    token labels carry their position ("it·9"): those of repeated tokens, all, or none; ``max_cells``: the
    screen's resolution for long texts; ``interactive``: clickable cells (exports use :meth:`for_export`)."""

    presentation: bool = False
    dark: bool = False
    colorscale: str = "Viridis"  # sequential scale for weights
    diverging: str = "RdBu_r"  # for differences and raw scores
    positions: str = "duplicates"
    max_cells: int | None = None  # on screen: token axes longer than this are block-averaged (None: exact)
    interactive: bool = False  # on screen: click targets over heatmap cells (viz/figures/cells.py; never in exports)
    box: tuple[int, int] | None = None  # (width, height) px the figure is laid out in (slides); None: its own size
    window: tuple[int, int] | None = None  # on slides: token × token maps show only tokens start..stop-1

    def __post_init__(self) -> None:
        if self.positions not in LABEL_POSITIONS:
            raise ValueError(f"positions must be one of {LABEL_POSITIONS}, got {self.positions!r}")

    def exact(self) -> Theme:
        """The same look at full resolution (for views that must stay exact on screen)."""
        return replace(self, max_cells=None)

    def for_export(self) -> Theme:
        """The same look for a file: full resolution, no on-screen click targets."""
        return replace(self, max_cells=None, interactive=False)

    def for_slide(self, band: int = 0, window: tuple[int, int] | None = None) -> Theme:
        """The presentation look laid out in the 16:9 box a slide shows at SLIDE_SCALE× (1920 × 1080 px), less
        ``band`` px at the bottom for the caption band: ticks come out at 44.8 px (18 pt), titles at 48 px. ``window``:
        token × token maps show only those tokens (start, stop), so that every one is labelled."""
        width, height = SLIDE_BOX
        return replace(self.for_export(), presentation=True, box=(width, height - int(band)), window=window)

    @property
    def sizes(self) -> Sizes:
        if self.presentation and self.box is not None:  # a slide: ticks print at 18 pt (SLIDE_TICK_PX of 1920)
            return Sizes(base=22, tick=SLIDE_TICK, axis_title=22, title=30, hover=20)
        if self.presentation:
            return Sizes(base=22, tick=20, axis_title=22, title=30, hover=20)
        return Sizes(base=13, tick=12, axis_title=13, title=17, hover=13)

    @property
    def font_size(self) -> int:
        return self.sizes.base

    @property
    def line_scale(self) -> float:
        return 2.0 if self.presentation else 1.0

    @property
    def colors(self) -> dict[str, str]:
        """Page, text and grid colours (high contrast). Set directly: a named plotly template costs ~100 ms."""
        if self.dark:
            return {"bg": "#111418", "text": "#f8f9fa", "grid": "#3d434a", "muted": "#ced4da"}
        return {"bg": "#ffffff", "text": "#111111", "grid": "#e9ecef", "muted": "#343a40"}


SLIDE = (1920, 1080)  # px of a 16:9 slide image
SLIDE_SCALE = 1.6  # a slide's box is drawn at 1.6×: titles at 48 px
SLIDE_TICK = 28  # px at 1× of a slide's tick labels: 44.8 of 1920 px, 18.3 pt in a deck's 10.9-in picture (LibreOffice)
SLIDE_TICK_PX = SLIDE_TICK * SLIDE_SCALE
SLIDE_BOX = (int(SLIDE[0] / SLIDE_SCALE), int(SLIDE[1] / SLIDE_SCALE))  # (1200, 675): the layout box of a slide
SLIDE_TOKENS = 10  # token labels a slide's token × token map shows at 18 pt (its 675-px box less titles and ticks)
DEFAULT_THEME = Theme()
COLORBLIND_SCALES = ("Viridis", "Cividis", "Magma", "Inferno", "Plasma", "Blues", "Greys")
