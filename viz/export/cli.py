"""The export command line: any view of the app as PNG, SVG or HTML, or a whole page as an export pack.

    python -m viz.export --list
    python -m viz.export --model bundled --text "The cat sat on the mat." --view attention \\
        --layer 1 --head 0 --format svg --out fig.svg
    python -m viz.export --model minilm --text "..." --view qkv.query --set query=3 --size slide --out q.png
    python -m viz.export --model minilm --text "..." --pack lesson.zip --page attention --presentation
    python -m viz.export --model path/to/hf-folder --text "..." --data captured.npz   # the numbers only

It loads the model, observes the text and builds the views through viz.views, as the app does.
"""

from __future__ import annotations

import argparse
import io
import sys
from pathlib import Path

import numpy as np

from model.errors import CheckpointError
from model.io.catalog import SOURCES, ModelSpec
from model.io.catalog import load as load_model
from viz.export.data import observation_arrays
from viz.export.offline import figure_html
from viz.export.pack import build_pack
from viz.export.provenance import provenance, provenance_line
from viz.export.render import render_view
from viz.figures.common import EXPORT_SIZES, LABEL_POSITIONS, Theme
from viz.views import REGISTRY, ViewUnavailableError, build, page_views
from viz.views.base import View
from viz.views.source import DirectSource

#: catalog entries the command reaches by name (an upload is the app's; a path is any other --model)
NAMED = tuple(kind for kind in SOURCES if kind not in ("upload", "folder"))
#: older view names of this command, kept working
ALIASES = {"heatmap": ("attention", {"mode": "weights"}), "scores": ("attention", {"mode": "scores"})}
#: what --pack exports without --page or --view: the attention page, the head view and the overview
DEFAULT_PACK = ("heatmap", "scores", "heads", "mean", "headview", "overview")


def parse_value(default, text: str):
    """A --set value in the type of the selection's default (ints, floats, booleans, tuples of ints)."""
    if isinstance(default, bool):
        if text.lower() not in ("true", "false", "on", "off", "1", "0"):
            raise ValueError(f"expected true or false, got {text!r}")
        return text.lower() in ("true", "on", "1")
    if isinstance(default, int):
        return int(text)
    if isinstance(default, float):
        return float(text)
    if isinstance(default, tuple):
        items = [x for x in text.replace(",", " ").split() if x]
        if default and isinstance(default[0], tuple):  # pairs such as heads to ablate: "0:1 2:3"
            return tuple(tuple(int(v) for v in x.split(":")) for x in items)
        return tuple(int(x) for x in items)
    return text


def selection_for(key: str, args: argparse.Namespace) -> tuple[str, dict]:
    """(registry key, selection) for a view name and the command's flags."""
    key, fixed = ALIASES.get(key, (key, {}))
    if key not in REGISTRY:
        raise ValueError(f"unknown view {key!r}; see --list")
    accepted = REGISTRY[key].selection
    selection = dict(fixed)
    for name in ("layer", "head", "query"):
        if name in accepted and getattr(args, name) is not None:
            selection[name] = getattr(args, name)
    if key == "headview" and args.head is not None:
        selection["heads"] = (args.head,)
    if key == "overview":
        selection.update(layer=args.layer or 0, head=args.head or 0)
    for item in args.set or []:
        name, _, text = item.partition("=")
        if name not in accepted:
            raise ValueError(f"view {key!r} has no setting {name!r}; it has {', '.join(accepted) or 'none'}")
        selection[name] = parse_value(accepted[name], text)
    return key, selection


def write_views(
    views: list[View], out: Path, fmt: str, size: str, *, model: str = "", text: str = "", caption: bool | None = None
) -> list[Path]:
    """Write one file per view: ``out`` itself for one view, ``out`` with the part's name for several. Each
    carries its caption and provenance (images: in the metadata, and in a band when ``caption``, default on
    for slides)."""
    paths = []
    band = size == "slide" if caption is None else caption
    for item in views:
        part = item.key.rsplit(".", 1)[-1] if len(views) > 1 else ""
        path = out.with_name(f"{out.stem}_{part}{out.suffix}") if part else out
        record = provenance(item, model=model, text=text)
        if fmt == "html":
            source = provenance_line(record)
            path.write_text(figure_html(item.exact(), item.title, caption=item.caption, source=source), "utf-8")
        else:
            path.write_bytes(render_view(item, fmt, size=size, caption=band, provenance=record))
        paths.append(path)
    return paths


def list_views() -> str:
    lines = ["view (page): settings and defaults"]
    for key, spec in REGISTRY.items():
        settings = ", ".join(f"{k}={v!r}" for k, v in spec.selection.items()) or "—"
        lines.append(f"  {key} ({spec.page}): {settings}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m viz.export", description="Export Attention Lab figures.")
    p.add_argument("--list", action="store_true", help="list every view and its settings, then stop")
    p.add_argument(
        "--lecture",
        action="store_true",
        help="build the whole lecture on --text (the post's story, about 18 slides with computed takeaways and notes) "
        "and write it to --out as .pptx or, with --format html, one offline HTML file",
    )
    p.add_argument(
        "--no-train", action="store_true", help="with --lecture: skip the induction slides if no run is stored"
    )
    p.add_argument(
        "--report",
        action="store_true",
        help="load --model and print what was read: files, tensors used / redundant / left out, tokenizer; then stop",
    )
    p.add_argument("--model", default="bundled", help=f"{', '.join(NAMED)}, or a checkpoint file/folder path")
    p.add_argument("--heads", type=int, help="heads per layer of a checkpoint that does not store them (the post's)")
    p.add_argument("--norm", choices=("pre", "post"), help="block order of the post's encoder (default: pre-norm)")
    p.add_argument(
        "--tokenizer",
        help="for a checkpoint without one: bundled (BERT uncased), ids (the text is token ids) or a tokenizer.json",
    )
    p.add_argument("--text", help="the text (an encoder–decoder's decoder: the target it writes)")
    p.add_argument("--stack", choices=("decoder", "encoder"), help="an encoder–decoder's (T5, BART): default decoder")
    p.add_argument("--source", default="", help="the source an encoder–decoder's decoder reads")
    p.add_argument("--view", action="append", help=f"a view key (see --list; also {', '.join(ALIASES)}); repeatable")
    p.add_argument("--page", help="with --pack: every view of this page (url path, e.g. attention, qkv)")
    p.add_argument("--layer", type=int)
    p.add_argument("--head", type=int)
    p.add_argument("--query", type=int, help="query token position (views that explain one query)")
    p.add_argument("--set", action="append", metavar="NAME=VALUE", help="any other setting of the view")
    p.add_argument("--format", default=None, choices=("png", "svg", "html", "pptx"))
    p.add_argument("--size", default="screen", choices=tuple(EXPORT_SIZES), help="slide: 1920 × 1080 px")
    p.add_argument(
        "--caption", default="auto", choices=("auto", "on", "off"), help="caption band under images (auto: on slides)"
    )
    p.add_argument("--out", help="output file for the view(s)")
    p.add_argument("--pack", help="write an export pack (zip): figures, HTML, data and a README")
    p.add_argument("--matrices", action="store_true", help="in a pack, also one CSV matrix per head")
    p.add_argument(
        "--data", help="write every captured array (ids, patterns, q, k, v, hidden, head metrics) as one .npz"
    )
    p.add_argument("--presentation", action="store_true", help="large fonts for slides")
    p.add_argument("--dark", action="store_true")
    p.add_argument("--colorscale", default="Viridis")
    p.add_argument("--positions", default="duplicates", choices=LABEL_POSITIONS, help="token labels with positions")
    p.add_argument("--hide-special", action="store_true")
    args = p.parse_args(argv)
    if args.list:
        print(list_views())
        return 0
    answers = {"heads": args.heads or 0, "norm": args.norm or "", "tokenizer": args.tokenizer or "",
               "stack": args.stack or "", "source_text": args.source}  # fmt: skip
    spec = ModelSpec(args.model) if args.model in NAMED else ModelSpec("folder", path=args.model, **answers)
    if args.report:
        try:
            loaded = load_model(spec)
        except CheckpointError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
        print(loaded.name)
        print(f"Read as {loaded.report.family or loaded.description['family'] or 'an Attention Lab model'}")
        print("\n".join(loaded.report.summary()))
        return 0
    if args.lecture:
        return write_lecture(args)
    if not args.text:
        p.error("give --text")
    if not args.out and not args.pack and not args.data:
        p.error("give --out FILE, --pack FILE.zip or --data FILE.npz")
    theme = Theme(presentation=args.presentation, dark=args.dark, colorscale=args.colorscale, positions=args.positions)
    try:
        src = DirectSource.for_text(spec, args.text, hide_special=args.hide_special, whole=True)  # as the app reads it
        for notice in [*src.loaded.warnings, *src.obs.notices]:
            print(f"note: {notice}", file=sys.stderr)
        if args.data:
            buf = io.BytesIO()
            np.savez_compressed(buf, **observation_arrays(src.full()))
            Path(args.data).write_bytes(buf.getvalue())
            print(f"wrote {args.data}")
        if args.out:
            key, selection = selection_for((args.view or ["attention"])[0], args)
            fmt = args.format or Path(args.out).suffix.lstrip(".").lower() or "png"
            made = build(key, src, theme, **selection)
            band = {"on": True, "off": False}.get(args.caption)
            for path in write_views(
                made, Path(args.out), fmt, args.size, model=src.loaded.name, text=args.text, caption=band
            ):
                print(f"wrote {path}")
        if args.pack:
            names = page_views(args.page) if args.page else (args.view or list(DEFAULT_PACK))
            if not names:
                pages = sorted({s.page for s in REGISTRY.values()})
                raise ValueError(f"no page {args.page!r}; pages: {', '.join(pages)}")
            views = []
            for name in names:
                key, selection = selection_for(name, args)
                try:
                    views += build(key, src, theme, **selection)
                except ViewUnavailableError as exc:
                    print(f"note: skipped {name}: {exc}", file=sys.stderr)
            layer, head = args.layer or 0, args.head or 0
            settings = {"model": src.loaded.name, "text": args.text, "page": args.page or "cli", "theme": vars(theme)}
            data, notes = build_pack(
                views,
                src.full(),
                settings,
                layer=layer,
                head=head,
                size=args.size,
                matrices=args.matrices,
                caption={"on": True, "off": False}.get(args.caption),
            )
            Path(args.pack).write_bytes(data)
            for note in notes:
                print(f"note: {note}", file=sys.stderr)
            print(f"wrote {args.pack} ({len(data):,} bytes)")
    except (CheckpointError, ValueError, RuntimeError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


def write_lecture(args) -> int:
    """``--lecture``: the lecture on ``--text`` written to ``--out`` (pptx, or html with ``--format html``)."""
    from viz.export.deck import deck_html, deck_pptx
    from viz.export.lecture import build_lecture
    from viz.export.motion import motion_gif
    from viz.export.render import render_image

    if not args.out:
        print("error: give --out lecture.pptx (or --format html --out lecture.html)", file=sys.stderr)
        return 2
    fmt = args.format or ("html" if Path(args.out).suffix.lower() == ".html" else "pptx")
    title = "Attention from scratch"

    def say(fraction: float, message: str) -> None:
        print(f"{fraction:4.0%} {message}", file=sys.stderr)

    try:
        items, notes = build_lecture(args.text or "", progress=say, train=not args.no_train)
    except (CheckpointError, ValueError, RuntimeError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    for note in notes:
        print(f"note: {note}", file=sys.stderr)
    if fmt == "html":
        Path(args.out).write_text(deck_html(items, title=title, animate=motion_gif), encoding="utf-8")
    else:
        render = lambda fig: render_image(fig, "png", size="slide")  # noqa: E731
        Path(args.out).write_bytes(deck_pptx(items, title=title, render=render, progress=say, animate=motion_gif))
    print(f"wrote {args.out} ({len(items)} figures)")
    return 0
