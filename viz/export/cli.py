"""The export command line: ``python -m viz.export --model bundled --text "..." --view heatmap --out fig.svg``.

    python -m viz.export --model bundled --text "The cat sat on the mat." --view heatmap \\
        --layer 1 --head 0 --format svg --out fig.svg
    python -m viz.export --model minilm --text "..." --pack out.zip

It loads the model, observes the text and builds the same figures the app draws.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import plotly.graph_objects as go

from model.errors import CheckpointError
from model.io.catalog import ModelSpec, load
from model.observe import observe
from viz.export.offline import figure_html
from viz.export.pack import build_pack
from viz.export.render import render_image
from viz.figures import attention_heatmap, head_view, heads_grid, model_overview
from viz.figures.common import Theme

VIEWS = ("heatmap", "scores", "heads", "mean", "headview", "overview")


def build_view(obs, view: str, layer: int, head: int, theme: Theme, model_name: str) -> go.Figure:
    """The same figures the app draws, by name (for the CLI)."""
    tokens = obs.tokens
    if not 0 <= layer < obs.n_layers or not 0 <= head < obs.n_heads:
        raise ValueError(f"layer/head out of range: the model has {obs.n_layers} layers × {obs.n_heads} heads")
    if view == "heatmap":
        return attention_heatmap(
            obs.patterns[layer, head], tokens, theme=theme, title=f"{model_name} — layer {layer}, head {head}"
        )
    if view == "scores":
        return attention_heatmap(
            obs.scores[layer, head],
            tokens,
            mode="scores",
            theme=theme,
            title=f"{model_name} — layer {layer}, head {head}: scores",
        )
    if view == "heads":
        return heads_grid(obs.patterns[layer], tokens, theme=theme, title=f"{model_name} — layer {layer}")
    if view == "mean":
        return attention_heatmap(
            obs.patterns[layer].mean(0),
            tokens,
            theme=theme,
            title=f"{model_name} — layer {layer}, mean over heads",
        )
    if view == "headview":
        return head_view(
            obs.patterns[layer, [head]],
            tokens,
            head_labels=[f"head {head}"],
            theme=theme,
            title=f"{model_name} — layer {layer}, head {head}",
        )
    if view == "overview":
        return model_overview(obs.patterns, theme=theme, title=f"{model_name}: every head")
    raise ValueError(f"unknown view {view!r}; choose from {', '.join(VIEWS)}")


def main(argv: list[str] | None = None) -> int:
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
        obs = observe(loaded.model, loaded.tokenizer, args.text)
        theme = Theme(presentation=args.presentation, dark=args.dark, colorscale=args.colorscale)
        name = loaded.name
        for notice in obs.notices:
            print(f"note: {notice}", file=sys.stderr)
        if args.out:
            fig = build_view(obs, args.view, args.layer, args.head, theme, name)
            fmt = args.format or Path(args.out).suffix.lstrip(".").lower() or "png"
            if fmt == "html":
                Path(args.out).write_text(figure_html(fig, name), encoding="utf-8")
            else:
                Path(args.out).write_bytes(render_image(fig, fmt))
            print(f"wrote {args.out}")
        if args.pack:
            figs = [
                (f"{v} L{args.layer} H{args.head}", build_view(obs, v, args.layer, args.head, theme, name))
                for v in VIEWS
            ]
            settings = {"model": name, "text": args.text, "page": "cli", "theme": vars(theme)}
            data, notes = build_pack(figs, obs, settings, layer=args.layer, head=args.head)
            Path(args.pack).write_bytes(data)
            for note in notes:
                print(f"note: {note}", file=sys.stderr)
            print(f"wrote {args.pack} ({len(data):,} bytes)")
    except (CheckpointError, ValueError, RuntimeError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0
