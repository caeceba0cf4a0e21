"""Static images (PNG, SVG) through kaleido and the system's Chromium, with one render server per process."""

from __future__ import annotations

import logging
import shutil
import threading
import time

import plotly.graph_objects as go

from viz.figures.common import export_size

CHROMIUM_NAMES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "chrome")
INSTALL_HINT = "install Debian's chromium (apt-get install chromium) to export PNG and SVG images"
_kaleido_lock = threading.Lock()
_kaleido_started = False
_warm_up_thread: threading.Thread | None = None


def find_browser() -> str | None:
    """Path of a Chromium-family browser kaleido can drive, or None."""
    for name in CHROMIUM_NAMES:
        path = shutil.which(name)
        if path:
            return path
    return None


def image_export_available() -> bool:
    return find_browser() is not None


def _start_renderer_locked() -> None:
    """Start the process's kaleido render server unless it runs already (caller holds the lock)."""
    global _kaleido_started
    if not _kaleido_started:
        import kaleido

        kaleido.start_sync_server(mathjax=False, silence_warnings=True)
        _kaleido_started = True


def warm_up_renderer(delay: float = 0.0) -> threading.Thread | None:
    """Start the render server on a background thread after ``delay`` seconds, so that the first PNG/SVG
    download does not wait for a browser to start (seconds) — and, with a delay, so that starting a browser
    does not slow the first page down. Idempotent; None when it runs or is starting, or no browser exists.
    A failure here is only logged: the next download starts the server itself and reports the error."""
    global _warm_up_thread
    if _kaleido_started or _warm_up_thread is not None or not image_export_available():
        return None

    def start() -> None:
        time.sleep(delay)
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
    import kaleido

    with _kaleido_lock:  # one render server, used by one request at a time
        _start_renderer_locked()
        width, height = export_size(fig, size)
        scale = 1 if fmt == "svg" or size == "slide" else scale
        return kaleido.calc_fig_sync(fig, opts={"format": fmt, "scale": scale, "width": width, "height": height})
