"""Export packs: one zip with every view of a page as PNG + SVG + HTML, the plotly.js library once, the data
(one tidy CSV, optionally one matrix per head), every captured array, and a README."""

from __future__ import annotations

import datetime as dt
import io
import json
import zipfile
from collections.abc import Callable, Sequence

import numpy as np

from viz.export.data import long_csv, matrix_csv, observation_arrays, tokens_csv
from viz.export.offline import LIBRARY_NAME, figure_html, library, page_html
from viz.export.provenance import app_version, provenance, provenance_line
from viz.export.render import INSTALL_HINT, image_export_available, render_view
from viz.views.base import View

ALL_HEADS_UP_TO = 64  # tokens: up to this length the tidy CSV holds every head, beyond it the focus head only


def pack_heads(obs, layer: int, head: int) -> list[tuple[int, int]]:
    """The heads whose attention goes into the pack's data: all of them for short texts, else the focus head."""
    if obs.n_tokens <= ALL_HEADS_UP_TO:
        return [(lay, h) for lay in range(obs.n_layers) for h in range(obs.n_heads)]
    return [(layer, head)]


def build_pack(
    views: Sequence[View],
    obs,
    settings: dict,
    *,
    layer: int = 0,
    head: int = 0,
    size: str = "screen",
    matrices: bool = False,
    progress: Callable[[float, str], None] | None = None,
    images: bool | None = None,
    caption: bool | None = None,
) -> tuple[bytes, list[str]]:
    """A zip of a page's views and the data behind them. Returns (zip bytes, notes).

    figures/: each view as PNG + SVG (at ``size``) and as interactive HTML, ``page.html`` with every view, and
    ``plotly.js`` once for all of them. data/: ``attention.csv`` (tidy: one row per head, query and key),
    ``tokens.csv``, ``captured.npz``; with ``matrices`` also one weights and one scores matrix per head.
    Every image carries its caption and provenance in its metadata, and in a band under the plot when
    ``caption`` (default: on for slides); every HTML file and the README carry them as text.
    Without a Chromium browser the images are skipped and a note says why.
    """
    caption = size == "slide" if caption is None else caption
    model, text = settings.get("model", ""), settings.get("text", "")
    records = [provenance(item, model=model, text=text, options=settings.get("options")) for item in views]
    progress = progress or (lambda frac, msg: None)
    images = image_export_available() if images is None else images
    notes = [] if images else [f"PNG/SVG images were skipped: {INSTALL_HINT}."]
    heads = pack_heads(obs, layer, head)
    buf = io.BytesIO()
    steps = max(1, len(views) * (3 if images else 1) + 3)
    done = 0
    suffix = "_slide" if size == "slide" else ""
    with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        zf.writestr(f"figures/{LIBRARY_NAME}", library())
        exact = [item.exact() for item in views]  # full resolution, whatever the screen showed
        for i, (item, fig, record) in enumerate(zip(views, exact, records)):
            stem = f"figures/{i:02d}_{item.name}"
            if images:
                for fmt in ("png", "svg"):
                    progress(done / steps, f"rendering {item.title} ({fmt})")
                    image = render_view(item, fmt, size=size, caption=caption, provenance=record)
                    zf.writestr(f"{stem}{suffix}.{fmt}", image)
                    done += 1
            source = provenance_line(record)
            zf.writestr(f"{stem}.html", figure_html(fig, item.title, embed=False, caption=item.caption, source=source))
            done += 1
        caption = f"{settings.get('model', '')}: {settings.get('text', '')}"
        pairs = [(item.title, fig, item.caption) for item, fig in zip(views, exact)]
        title = f"Attention Lab — {settings.get('page', '')}"
        zf.writestr("figures/page.html", page_html(pairs, title=title, caption=caption, embed=False))
        progress(done / steps, "writing data")
        zf.writestr("data/tokens.csv", tokens_csv(obs))
        zf.writestr("data/attention.csv", long_csv(obs, heads))
        if matrices:
            tokens = list(obs.tokens)
            for lay, h in heads:
                zf.writestr(f"data/matrices/weights_L{lay}_H{h}.csv", matrix_csv(obs.patterns[lay, h], tokens, tokens))
                if obs.scores is not None or obs.q is not None:
                    scores = obs.score_matrix(lay, h)
                    zf.writestr(f"data/matrices/scores_L{lay}_H{h}.csv", matrix_csv(scores, tokens, tokens))
        done += 1
        progress(done / steps, "compressing arrays")
        npz = io.BytesIO()
        np.savez_compressed(npz, **observation_arrays(obs))
        zf.writestr("data/captured.npz", npz.getvalue())
        done += 1
        zf.writestr("figures/provenance.json", json.dumps(records, indent=2, ensure_ascii=False))
        zf.writestr("README.md", pack_readme(settings, views, notes, heads, matrices, images, suffix, records))
    progress(1.0, "done")
    return buf.getvalue(), notes


def pack_readme(settings: dict, views, notes, heads, matrices: bool, images: bool, suffix: str, records=None) -> str:
    when = dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
    which = "every head" if len(heads) > 1 else f"layer {heads[0][0]}, head {heads[0][1]}"
    image_lines = [f"- `figures/{i:02d}_{v.name}{suffix}.png/.svg` — {v.title}" for i, v in enumerate(views)]
    records = records or [{} for _ in views]
    figure_lines = [
        f"{i:02d}. **{v.title}**"
        + (f" — {v.caption}" if v.caption else "")
        + (f"  \n    _{provenance_line(r)}_" if r else "")
        for i, (v, r) in enumerate(zip(views, records))
    ]
    lines = [
        "# Attention Lab export",
        "",
        f"- model: {settings.get('model', '?')}",
        f"- text: {json.dumps(settings.get('text', ''))[:500]}",
        f"- page: {settings.get('page', '?')}",
        f"- settings: {json.dumps({k: v for k, v in settings.items() if k not in ('model', 'text', 'page')})}",
        f"- exported: {when}, Attention Lab {app_version()}",
        "",
        "## Figures",
        "",
        *figure_lines,
        "",
        "## Files",
        "",
        *(image_lines if images else []),
        "- `figures/NN_*.html` — each figure, interactive, offline (opens with `figures/plotly.js` beside it)",
        "- `figures/page.html` — every figure of the page in one interactive page",
        "- `figures/plotly.js` — plotly.js (MIT licence), shared by the HTML files",
        "- `figures/provenance.json` — for each figure: the model, the text, the view and its selection, the "
        "options, the app's version (PNG and SVG files carry the same in their metadata, with the caption)",
        f"- `data/attention.csv` — {which}: one row per (layer, head, query, key) with tokens, weight and score",
        *(
            ["- `data/matrices/*.csv` — one matrix per head: rows are query tokens, columns key tokens"]
            if matrices
            else []
        ),
        "- `data/captured.npz` — every captured array (patterns, scores, q, k, v, z, attention in/out, hidden, "
        "metrics); shapes (layers, heads, tokens, …)",
        "- `data/tokens.csv` — tokens with ids and character spans",
        "",
        *notes,
    ]
    return "\n".join(lines) + "\n"
