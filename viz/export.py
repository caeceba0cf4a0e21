"""Teaching export: static images (kaleido on the system chromium), standalone HTML, export packs, CLI.

    python -m viz.export --model bundled --text "The cat sat on the mat." --view heatmap \
        --layer 1 --head 0 --format svg --out fig.svg
    python -m viz.export --model minilm --text "..." --pack out.zip

No Streamlit here: the app and the CLI share these functions and the figure builders.
"""

from __future__ import annotations

import argparse
import csv
import datetime as dt
import html
import io
import json
import logging
import shutil
import sys
import threading
import zipfile
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
import plotly.graph_objects as go

from viz.figures import attention_heatmap, head_view, heads_grid, model_overview
from viz.figures.common import Theme, safe_filename

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


def warm_up_renderer() -> threading.Thread | None:
    """Start the render server on a background thread, so that the first PNG/SVG download does not wait
    for a browser to start (seconds). Idempotent; None when it runs or is starting, or no browser exists.
    A failure here is only logged: the next download starts the server itself and reports the error."""
    global _warm_up_thread
    if _kaleido_started or _warm_up_thread is not None or not image_export_available():
        return None

    def start() -> None:
        try:
            with _kaleido_lock:
                _start_renderer_locked()
        except Exception:  # a download retries and shows the reason
            logging.getLogger(__name__).warning("could not start the image renderer", exc_info=True)

    _warm_up_thread = threading.Thread(target=start, name="attention-lab-renderer", daemon=True)
    _warm_up_thread.start()
    return _warm_up_thread


def render_image(fig: go.Figure, fmt: str = "png", scale: int = 3) -> bytes:
    """PNG or SVG bytes of a figure, through one persistent kaleido render server per process."""
    if fmt not in ("png", "svg"):
        raise ValueError("format must be png or svg")
    if not image_export_available():
        raise RuntimeError(f"no Chromium browser found: {INSTALL_HINT}")
    import kaleido

    with _kaleido_lock:  # one render server, used by one request at a time
        _start_renderer_locked()
        height = fig.layout.height or 600
        width = fig.layout.width or max(800, min(1500, int(height * 1.35)))
        return kaleido.calc_fig_sync(
            fig, opts={"format": fmt, "scale": scale if fmt == "png" else 1, "width": width, "height": height}
        )


def figure_html(fig: go.Figure, title: str = "Attention Lab figure") -> str:
    """One self-contained interactive HTML file (plotly.js inlined: works offline, no CDN)."""
    return page_html([(title, fig)], title=title)


def page_html(figures: Sequence[tuple[str, go.Figure]], *, title: str, caption: str = "") -> str:
    """Every figure of a page in one offline HTML file. Titles and captions are escaped."""
    from plotly.offline import get_plotlyjs

    parts = []
    for name, fig in figures:
        div = fig.to_html(full_html=False, include_plotlyjs=False, config={"displaylogo": False})
        parts.append(f"<section><h2>{html.escape(name)}</h2>{div}</section>")
    return (
        "<!DOCTYPE html><html><head><meta charset='utf-8'>"
        f"<title>{html.escape(title)}</title>"
        "<style>body{font-family:sans-serif;margin:24px;max-width:1400px} h2{font-size:1.1em}</style>"
        f"<script type='text/javascript'>{get_plotlyjs()}</script></head><body>"
        f"<h1>{html.escape(title)}</h1><p>{html.escape(caption)}</p>{''.join(parts)}</body></html>"
    )


def matrix_csv(matrix: np.ndarray, row_labels: Sequence[str], col_labels: Sequence[str]) -> str:
    """A labelled matrix as CSV: first column the query token, header the key tokens (position-prefixed)."""
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(["query \\ key", *[f"{j}:{t}" for j, t in enumerate(col_labels)]])
    for i, (label, row) in enumerate(zip(row_labels, matrix)):
        writer.writerow([f"{i}:{label}", *[repr(float(v)) if np.isfinite(v) else str(v) for v in row]])
    return out.getvalue()


def read_matrix_csv(text: str) -> tuple[np.ndarray, list[str], list[str]]:
    """Inverse of :func:`matrix_csv` (used by tests and by anyone re-plotting the data)."""
    rows = list(csv.reader(io.StringIO(text)))
    cols = [c.split(":", 1)[1] for c in rows[0][1:]]
    labels = [r[0].split(":", 1)[1] for r in rows[1:]]
    return np.array([[float(v) for v in r[1:]] for r in rows[1:]], dtype=np.float64), labels, cols


def analysis_arrays(analysis) -> dict[str, np.ndarray]:
    """Every captured array of an analysis, for the .npz."""
    arrays = {
        "ids": np.array(analysis.ids),
        "special": analysis.special,
        "patterns": analysis.patterns,
        "hidden": analysis.hidden,
    }
    for name in ("scores", "q", "k", "v", "z", "attn_in", "attn_out"):
        value = getattr(analysis, name)
        if value is not None:
            arrays[name] = value
    for name, value in analysis.metrics.items():
        arrays[f"metric_{name}"] = value
    return arrays


def build_pack(
    figures: Sequence[tuple[str, go.Figure]],
    analysis,
    settings: dict,
    *,
    layer: int = 0,
    head: int = 0,
    progress: Callable[[float, str], None] | None = None,
    images: bool | None = None,
) -> tuple[bytes, list[str]]:
    """A zip: every figure as PNG + SVG (+ interactive HTML), the data behind them, tokens, README.md.

    Returns (zip bytes, notes). Without a Chromium browser the images are skipped and a note says why.
    """
    progress = progress or (lambda frac, msg: None)
    images = image_export_available() if images is None else images
    notes = [] if images else [f"PNG/SVG images were skipped: {INSTALL_HINT}."]
    buf = io.BytesIO()
    tokens = list(analysis.tokens)
    steps = max(1, len(figures) * (2 if images else 1) + 3)
    done = 0
    with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for i, (name, fig) in enumerate(figures):
            stem = f"figures/{i:02d}_{safe_filename(name)}"
            if images:
                for fmt in ("png", "svg"):
                    progress(done / steps, f"rendering {name} ({fmt})")
                    zf.writestr(f"{stem}.{fmt}", render_image(fig, fmt))
                    done += 1
            else:
                done += 1
        zf.writestr(
            "figures/page.html",
            page_html(
                figures,
                title=f"Attention Lab — {settings.get('page', '')}",
                caption=f"{settings.get('model', '')}: {settings.get('text', '')}",
            ),
        )
        progress(done / steps, "writing data")
        zf.writestr("data/tokens.csv", tokens_csv(analysis))
        n_heads = analysis.n_layers * analysis.n_heads
        pairs = (
            [(lay, h) for lay in range(analysis.n_layers) for h in range(analysis.n_heads)]
            if analysis.n_tokens <= 64 and n_heads <= 96
            else [(layer, head)]
        )
        for lay, h in pairs:
            zf.writestr(f"data/weights_L{lay}_H{h}.csv", matrix_csv(analysis.patterns[lay, h], tokens, tokens))
            if analysis.scores is not None:
                zf.writestr(f"data/scores_L{lay}_H{h}.csv", matrix_csv(analysis.scores[lay, h], tokens, tokens))
        done += 1
        progress(done / steps, "compressing arrays")
        npz = io.BytesIO()
        np.savez_compressed(npz, **analysis_arrays(analysis))
        zf.writestr("data/captured.npz", npz.getvalue())
        done += 1
        zf.writestr("README.md", pack_readme(settings, figures, notes, layer, head, len(pairs)))
    progress(1.0, "done")
    return buf.getvalue(), notes


def tokens_csv(analysis) -> str:
    out = io.StringIO()
    w = csv.writer(out)
    w.writerow(["position", "token", "id", "start", "end", "special"])
    for i, (t, tid, (a, b), sp) in enumerate(zip(analysis.tokens, analysis.ids, analysis.offsets, analysis.special)):
        w.writerow([i, t, tid, a, b, bool(sp)])
    return out.getvalue()


def pack_readme(settings: dict, figures, notes, layer: int, head: int, n_csv: int) -> str:
    when = dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
    lines = [
        "# Attention Lab export",
        "",
        f"- model: {settings.get('model', '?')}",
        f"- text: {json.dumps(settings.get('text', ''))[:500]}",
        f"- page: {settings.get('page', '?')}; layer {layer}, head {head}",
        f"- settings: {json.dumps({k: v for k, v in settings.items() if k not in ('model', 'text', 'page')})}",
        f"- exported: {when}",
        "",
        "## Files",
        "",
        *[f"- `figures/{i:02d}_{safe_filename(n)}.png/.svg` — {n}" for i, (n, _) in enumerate(figures)],
        "- `figures/page.html` — every figure, interactive, offline (plotly.js inside)",
        f"- `data/weights_*.csv`, `data/scores_*.csv` — {n_csv} head(s): rows are query tokens, columns key tokens",
        "- `data/captured.npz` — every captured array (patterns, scores, q, k, v, z, attention in/out, hidden, "
        "metrics); shapes (layers, heads, tokens, …)",
        "- `data/tokens.csv` — tokens with ids and character spans",
        "",
        *notes,
    ]
    return "\n".join(lines) + "\n"


VIEWS = ("heatmap", "scores", "heads", "mean", "headview", "overview")


def build_view(analysis, view: str, layer: int, head: int, theme: Theme, model_name: str) -> go.Figure:
    """The same figures the app draws, by name (for the CLI)."""
    tokens = analysis.tokens
    if not 0 <= layer < analysis.n_layers or not 0 <= head < analysis.n_heads:
        raise ValueError(
            f"layer/head out of range: the model has {analysis.n_layers} layers × {analysis.n_heads} heads"
        )
    if view == "heatmap":
        return attention_heatmap(
            analysis.patterns[layer, head], tokens, theme=theme, title=f"{model_name} — layer {layer}, head {head}"
        )
    if view == "scores":
        return attention_heatmap(
            analysis.scores[layer, head],
            tokens,
            mode="scores",
            theme=theme,
            title=f"{model_name} — layer {layer}, head {head}: scores",
        )
    if view == "heads":
        return heads_grid(analysis.patterns[layer], tokens, theme=theme, title=f"{model_name} — layer {layer}")
    if view == "mean":
        return attention_heatmap(
            analysis.patterns[layer].mean(0),
            tokens,
            theme=theme,
            title=f"{model_name} — layer {layer}, mean over heads",
        )
    if view == "headview":
        return head_view(
            analysis.patterns[layer, [head]],
            tokens,
            head_labels=[f"head {head}"],
            theme=theme,
            title=f"{model_name} — layer {layer}, head {head}",
        )
    if view == "overview":
        return model_overview(analysis.patterns, theme=theme, title=f"{model_name}: every head")
    raise ValueError(f"unknown view {view!r}; choose from {', '.join(VIEWS)}")


def main(argv: list[str] | None = None) -> int:
    from model.catalog import ModelSpec, load
    from model.errors import CheckpointError
    from model.pipeline import analyse

    p = argparse.ArgumentParser(prog="python -m viz.export", description="Export Attention Lab figures.")
    p.add_argument("--model", default="bundled", help="bundled, minilm, random, or a checkpoint file/folder path")
    p.add_argument("--text", required=True)
    p.add_argument("--view", default="heatmap", choices=VIEWS)
    p.add_argument("--layer", type=int, default=0)
    p.add_argument("--head", type=int, default=0)
    p.add_argument("--format", default=None, choices=("png", "svg", "html"))
    p.add_argument("--out", help="output file for one figure")
    p.add_argument("--pack", help="write an export pack (zip) with every view, the data and a README")
    p.add_argument("--presentation", action="store_true", help="large fonts for slides")
    p.add_argument("--dark", action="store_true")
    p.add_argument("--colorscale", default="Viridis")
    args = p.parse_args(argv)
    if not args.out and not args.pack:
        p.error("give --out FILE or --pack FILE.zip")
    spec = (
        ModelSpec(args.model) if args.model in ("bundled", "minilm", "random") else ModelSpec("folder", path=args.model)
    )
    try:
        loaded = load(spec)
        analysis = analyse(loaded.model, loaded.tokenizer, args.text)
        theme = Theme(presentation=args.presentation, dark=args.dark, colorscale=args.colorscale)
        name = str(loaded.description["name"])
        for notice in analysis.notices:
            print(f"note: {notice}", file=sys.stderr)
        if args.out:
            fig = build_view(analysis, args.view, args.layer, args.head, theme, name)
            fmt = args.format or Path(args.out).suffix.lstrip(".").lower() or "png"
            if fmt == "html":
                Path(args.out).write_text(figure_html(fig, name), encoding="utf-8")
            else:
                Path(args.out).write_bytes(render_image(fig, fmt))
            print(f"wrote {args.out}")
        if args.pack:
            figs = [
                (f"{v} L{args.layer} H{args.head}", build_view(analysis, v, args.layer, args.head, theme, name))
                for v in VIEWS
            ]
            settings = {"model": name, "text": args.text, "page": "cli", "theme": vars(theme)}
            data, notes = build_pack(figs, analysis, settings, layer=args.layer, head=args.head)
            Path(args.pack).write_bytes(data)
            for note in notes:
                print(f"note: {note}", file=sys.stderr)
            print(f"wrote {args.pack} ({len(data):,} bytes)")
    except (CheckpointError, ValueError, RuntimeError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
