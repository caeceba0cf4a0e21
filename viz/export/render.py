"""Static images (PNG, SVG) through kaleido and the system's Chromium, with one render server per process.

Kaleido reloads its page (plotly.js, 3.5 MB of script) after every image: 0.13 s of a 0.15 s heatmap. Our server
reloads it every ``RELOAD_EVERY`` images and after a failed one: the same images (PNG byte for byte, SVG but for
plotly's random element ids and the order of a redrawn legend box's attributes), two to five times faster, and
what a page keeps between images is still bounded."""

from __future__ import annotations

import asyncio
import atexit
import logging
import shutil
import threading
import time
from collections.abc import Callable

import plotly.graph_objects as go

from viz.figures.common import export_size
from viz.figures.theme import SLIDE, SLIDE_BOX, SLIDE_SCALE

CHROMIUM_NAMES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "chrome")
INSTALL_HINT = "install Debian's chromium (apt-get install chromium) to export PNG and SVG images"
RELOAD_EVERY = 50  # images rendered on one page before it is loaded again
RENDER_TIMEOUT = 90.0  # seconds for one image (kaleido's own default)
_kaleido_lock = threading.Lock()
_renderer: _Renderer | None = None
_warm_up_thread: threading.Thread | None = None
_last_activity = 0.0  # time.monotonic() of the last script run's start or end (note_activity)
BUSY_POLL_S = 1.0  # how often the warm-up asks whether a background run still works


def find_browser() -> str | None:
    """Path of a Chromium-family browser kaleido can drive, or None."""
    for name in CHROMIUM_NAMES:
        path = shutil.which(name)
        if path:
            return path
    return None


def image_export_available() -> bool:
    return find_browser() is not None


class _Renderer:
    """One kaleido browser with one page, driven from its own event loop thread; ``render`` blocks the caller."""

    def __init__(self) -> None:
        import kaleido

        class Reusing(kaleido.Kaleido):
            """Kaleido that reloads its page every RELOAD_EVERY images or when asked to, not after every image."""

            renders = 0
            reload_next = False

            async def _return_kaleido_tab(self, tab) -> None:
                self.renders += 1
                if self.reload_next or self.renders % RELOAD_EVERY == 0:
                    self.reload_next = False
                    await tab.reload()
                await self.tabs_ready.put(tab)

        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="attention-lab-kaleido", daemon=True)
        self._thread.start()
        self.kaleido = Reusing(mathjax=False, timeout=RENDER_TIMEOUT)
        try:
            self._run(self.kaleido.open(), timeout=120)
        except BaseException:
            self._loop.call_soon_threadsafe(self._loop.stop)
            raise
        atexit.register(self.close)

    def _run(self, coro, timeout: float):
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result(timeout)

    def render(self, fig: go.Figure, opts: dict) -> bytes:
        """The image's bytes; after a failure the page is loaded again before the next image."""
        try:
            return self._run(self.kaleido.calc_fig(fig, opts=opts), timeout=RENDER_TIMEOUT + 10)
        except BaseException:
            self.kaleido.reload_next = True  # the failed image may have left the page in any state
            raise

    def close(self) -> None:
        """Close the browser and stop the loop (at exit; idempotent)."""
        if self._loop.is_running():
            try:
                self._run(self.kaleido.close(), timeout=10)
            except Exception:  # the browser is already gone
                logging.getLogger(__name__).debug("kaleido did not close cleanly", exc_info=True)
            self._loop.call_soon_threadsafe(self._loop.stop)


def _start_renderer_locked() -> None:
    """Start the process's render server unless it runs already (caller holds the lock)."""
    global _renderer
    if _renderer is None:
        _renderer = _Renderer()


def note_activity() -> None:
    """A script run starts or ends now (app.py, on every run): the renderer's warm-up waits for a quiet moment."""
    global _last_activity
    _last_activity = time.monotonic()


def warm_up_renderer(
    delay: float = 0.0, quiet: float = 0.0, busy: Callable[[], bool] | None = None
) -> threading.Thread | None:
    """Start the render server on a background thread after ``delay`` seconds, once no script run has started
    or ended for ``quiet`` seconds (:func:`note_activity`), so that the first PNG/SVG download does not wait for
    a browser to start (seconds) — and so that starting one (a second of a core) does not slow pages down:
    a class that opens the app together would otherwise share the server's cores with it. Nor while ``busy()``
    says a background run works (a long text read whole runs no script for seconds: the browser's start took
    2 s of its pass, bench/RESULTS.md). Idempotent; None when
    it runs or is starting, or no browser exists. A failure here is only logged: the next download starts the
    server itself and reports the error."""
    global _warm_up_thread
    if _renderer is not None or _warm_up_thread is not None or not image_export_available():
        return None
    note_activity()

    def start() -> None:
        time.sleep(delay)
        while True:
            if (idle := time.monotonic() - _last_activity) < quiet:
                time.sleep(quiet - idle)
            elif busy is not None and busy():
                time.sleep(max(quiet, BUSY_POLL_S))
            else:
                break
        try:
            with _kaleido_lock:
                _start_renderer_locked()
        except Exception:  # a download retries and shows the reason
            logging.getLogger(__name__).warning("could not start the image renderer", exc_info=True)

    _warm_up_thread = threading.Thread(target=start, name="attention-lab-renderer", daemon=True)
    _warm_up_thread.start()
    return _warm_up_thread


def render_image(fig: go.Figure, fmt: str = "png", scale: int = 3, size: str = "screen") -> bytes:
    """PNG or SVG bytes of a figure, through one persistent kaleido render server per process.

    ``size``: "screen" (the figure's height, a width that keeps heatmaps near square; PNG at ``scale``×) or
    "slide" (exactly 1920 × 1080 px, PNG at 1×)."""
    if fmt not in ("png", "svg"):
        raise ValueError("format must be png or svg")
    if not image_export_available():
        raise RuntimeError(f"no Chromium browser found: {INSTALL_HINT}")
    boxed = size == "slide" and fig.layout.width is not None  # laid out in a slide's box: drawn at SLIDE_SCALE×
    if boxed:
        width, height, scale = int(fig.layout.width), int(fig.layout.height), SLIDE_SCALE
    else:
        width, height = export_size(fig, size)
        scale = 1 if size == "slide" else scale
    with _kaleido_lock:  # one render server, used by one request at a time
        _start_renderer_locked()
        out = _renderer.render(
            fig, {"format": fmt, "scale": 1 if fmt == "svg" else scale, "width": width, "height": height}
        )
    return _scaled_svg(out, scale) if fmt == "svg" and boxed else out


def _scaled_svg(svg: bytes, scale: float) -> bytes:
    """An SVG shown ``scale``× its layout size (width and height scaled, the drawing kept by a viewBox)."""
    text = svg.decode("utf-8")
    end = text.index(">")
    head = text[:end]
    width, height = (float(head.split(f' {n}="')[1].split('"')[0]) for n in ("width", "height"))
    head = head.replace(f' width="{width:g}"', f' width="{width * scale:g}"', 1)
    head = head.replace(f' height="{height:g}"', f' height="{height * scale:g}"', 1)
    if " viewBox=" not in head:  # kaleido's SVG has one: the drawing keeps its layout coordinates
        head += f' viewBox="0 0 {width:g} {height:g}"'
    return (head + text[end:]).encode("utf-8")


def render_view(
    view, fmt: str = "png", *, size: str = "screen", caption: bool = False, provenance=None, window=None
) -> bytes:
    """A view's PNG or SVG as the user downloads it: at ``size`` ("slide": laid out in a 16:9 box, shown at
    exactly 1920 × 1080), with its computed caption in a band under the plot when ``caption``, and always the
    caption and ``provenance`` (a dict) in the file's metadata; ``window``: on a slide, token maps show only
    those tokens (start, stop)."""
    from viz.export.band import (
        band_height,
        png_with_band,
        png_with_metadata,
        slide_caption,
        svg_with_band,
        svg_with_metadata,
    )

    slide = size == "slide"
    sizes = (view.theme.for_slide() if slide else view.theme).sizes
    text = view.caption if caption else ""
    if slide:
        text = slide_caption(text, SLIDE_BOX[0], sizes.base)  # at most four lines: the plot keeps the slide
        fig, scale = view.slide(band_height(text, SLIDE_BOX[0], sizes.base), window), SLIDE_SCALE
    else:
        fig, scale = view.exact(), (1 if fmt == "svg" else 3)
    out = render_image(fig, fmt, scale=3, size=size)
    total = SLIDE[1] if slide and fig.layout.width is not None else None  # a slide is 1080 px, band included
    if text and fmt == "svg":
        out = svg_with_band(out, text, sizes.base, view.theme.colors, scale, total)
    elif text:
        out = png_with_band(out, text, sizes.base, view.theme.colors, scale, total)
    add = svg_with_metadata if fmt == "svg" else png_with_metadata
    return add(out, view.title, view.caption, dict(provenance or {}))
