"""Export packs: one zip with every figure of a page as PNG + SVG, an offline HTML page, the data and a README."""

from __future__ import annotations

import datetime as dt
import io
import json
import zipfile
from collections.abc import Callable, Sequence

import numpy as np
import plotly.graph_objects as go

from viz.export.data import matrix_csv, observation_arrays, tokens_csv
from viz.export.offline import page_html
from viz.export.render import INSTALL_HINT, image_export_available, render_image
from viz.figures.common import safe_filename


def build_pack(
    figures: Sequence[tuple[str, go.Figure]],
    obs,
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
    tokens = list(obs.tokens)
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
        zf.writestr("data/tokens.csv", tokens_csv(obs))
        n_heads = obs.n_layers * obs.n_heads
        pairs = (
            [(lay, h) for lay in range(obs.n_layers) for h in range(obs.n_heads)]
            if obs.n_tokens <= 64 and n_heads <= 96
            else [(layer, head)]
        )
        for lay, h in pairs:
            zf.writestr(f"data/weights_L{lay}_H{h}.csv", matrix_csv(obs.patterns[lay, h], tokens, tokens))
            if obs.scores is not None:
                zf.writestr(f"data/scores_L{lay}_H{h}.csv", matrix_csv(obs.scores[lay, h], tokens, tokens))
        done += 1
        progress(done / steps, "compressing arrays")
        npz = io.BytesIO()
        np.savez_compressed(npz, **observation_arrays(obs))
        zf.writestr("data/captured.npz", npz.getvalue())
        done += 1
        zf.writestr("README.md", pack_readme(settings, figures, notes, layer, head, len(pairs)))
    progress(1.0, "done")
    return buf.getvalue(), notes


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
