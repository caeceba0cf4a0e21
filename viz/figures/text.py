"""Text in figures: token labels (escaped, unique, with positions), thinned ticks, titles that fit."""

from __future__ import annotations

import html
import itertools
import math
from collections import Counter

import numpy as np

from viz.figures.theme import Sizes

ZW = "\u200b"  # zero-width space: keeps labels that would otherwise repeat distinct categories
MAX_TICKS = 60  # never more tick labels than this on one axis
CHAR_EM = 0.62  # average width of a character, in font sizes (DejaVu Sans / Arial, generous)


def position_of(tokens, index: int) -> int:
    """The text position of ``tokens[index]``: the one a token carries when others around it are hidden
    (``model.text.Placed``, special tokens left out), else ``index`` itself."""
    return getattr(tokens[index], "position", index)


def token_labels(tokens, positions: str = "duplicates") -> list[str]:
    """Display labels for tokens: HTML-escaped, unique, and carrying their position ("it·9") where asked.

    ``positions``: "duplicates" (only tokens that occur more than once), "all" or "none". Plotly renders
    tick and hover text as HTML, so a token such as ``<script>`` must be escaped to show as text. Labels
    that would still repeat get zero-width suffixes so plotly's categorical axes keep them apart.
    """
    tokens = list(tokens)
    texts = [html.escape(str(t), quote=False) or " " for t in tokens]
    counts = Counter(texts)
    labels = [
        f"{t}·{position_of(tokens, i)}" if positions == "all" or (positions == "duplicates" and counts[t] > 1) else t
        for i, t in enumerate(texts)
    ]
    seen: dict[str, int] = {}
    out = []
    for lab in labels:
        n = seen.get(lab, 0)
        seen[lab] = n + 1
        out.append(lab + ZW * n)
    return out


def unique_labels(tokens) -> list[str]:
    """Escaped, unique labels without positions (for labels that are not a sequence, e.g. predictions)."""
    return token_labels(tokens, "none")


def tick_budget(length_px: float, font_px: int) -> int:
    """How many tick labels an axis of ``length_px`` can show at ``font_px`` without crowding (≤ MAX_TICKS)."""
    return int(max(2, min(MAX_TICKS, length_px // (1.3 * font_px))))


def thinned(labels: list[str], budget: int, keep=()) -> dict:
    """Axis settings showing at most ``budget`` of ``labels``, evenly spaced (first and last kept), always with
    the positions in ``keep`` (the tokens in focus, those a caption names).

    Labels sit at their cells' centres, so two shown labels are at least ``ceil(n / budget)`` cells apart —
    the room ``budget`` labels would each have — and never overprint, kept ones included.
    Hover still names every cell; only the tick labels are thinned."""
    n = len(labels)
    if n <= budget:
        return {"tickmode": "array", "tickvals": labels, "ticktext": labels}
    keep = sorted({int(i) for i in keep if 0 <= int(i) < n})
    gap = math.ceil(n / max(1, budget))  # cells between two shown labels
    chosen: list[int] = []
    for i in keep:  # the focus first, then the kept ones that do not crowd it
        if all(abs(i - j) >= gap for j in chosen):
            chosen.append(i)
    spread = np.linspace(0, n - 1, max(2, (n - 1) // gap + 1)).round().astype(int)
    for i in [spread[0], spread[-1], *spread[1:-1]]:  # the ends first: an axis always shows where it starts and ends
        if len(chosen) >= budget:
            break
        if all(abs(int(i) - j) >= gap for j in chosen):
            chosen.append(int(i))
    shown = [labels[i] for i in sorted(chosen)]
    return {"tickmode": "array", "tickvals": shown, "ticktext": shown}


def plain_label(label: str) -> str:
    """The token a label shows: without its position ("it·9"), invisible suffixes or HTML escapes."""
    text = html.unescape(label.rstrip("\u200b\u2060\u2063"))
    head, dot, tail = text.rpartition("·")
    return head if dot and tail.isdigit() else text


def keep_shown(shown: list[str], labels: list[str], wanted: set[str], limit: int = 6) -> list[str]:
    """Thinned tick labels ``shown`` (a subset of ``labels``, in order) with the labels of the ``wanted``
    tokens added (at most ``limit`` of them), so that the axis keeps its number of labels and its spacing: a
    named label drops the labels closer to it than the thinning's gap that were only there for spacing (an end
    included), and the nearest other one when the axis is full; labels already shown and named stay."""
    index = {label: i for i, label in enumerate(labels)}
    chosen = sorted(index[s] for s in shown if s in index)
    wanted = {w.strip() for w in wanted}  # captions quote tokens without BPE's leading space
    named = [i for i, label in enumerate(labels) if plain_label(label).strip() in wanted]
    extra = [i for i in named if i not in chosen][:limit]
    if not extra or not chosen:
        return shown
    # what the thinning left between labels; one label alone had the whole axis (not 1: two named neighbours of a
    # lone label would then overprint each other)
    gap = min((b - a for a, b in itertools.pairwise(chosen)), default=-(-len(labels) // len(chosen)))
    fixed = {i for i in named if i in chosen}
    ends = (0, len(labels) - 1)
    for i in extra:
        if any(abs(i - j) < gap for j in fixed):
            continue  # it would overprint a label that must stay
        chosen = [j for j in chosen if j in fixed or abs(i - j) >= gap]
        spare = [j for j in chosen if j not in fixed and j not in ends]
        if spare and len(chosen) >= len(shown):
            chosen.remove(min(spare, key=lambda j: abs(j - i)))
        chosen = sorted([*chosen, i])
        fixed.add(i)
    return [labels[i] for i in chosen]


def wrap(text: str, width_px: float, font_px: float) -> str:
    """HTML-escape ``text`` and break it into lines (``<br>``) that fit ``width_px`` at ``font_px``."""
    limit = max(8, int(width_px / (CHAR_EM * font_px)))
    lines: list[str] = []
    for word in text.split(" "):
        while len(word) > limit:  # a word longer than a line is cut
            lines.append(word[:limit])
            word = word[limit:]
        if lines and len(lines[-1]) + 1 + len(word) <= limit:
            lines[-1] += " " + word
        else:
            lines.append(word)
    return "<br>".join(html.escape(line, quote=False) for line in lines)


def fit_title(title: str, width_px: float, sizes: Sizes, *, shrink: bool = True) -> tuple[str, int]:
    """(escaped title, font size) fitting ``width_px``, never cut. ``shrink``: first smaller, down to the
    axis-title size, to stay on one line, then wrapped (a figure's own height leaves little room for more
    lines); else wrapped at the title's size onto two lines before any shrinking (a slide keeps its title
    large). The styling moves a wrapped title down so that its first line stays in the image."""
    size = sizes.title
    lines = 1 if shrink else 2
    while size > sizes.axis_title and wrap(title, width_px, size).count("<br>") >= lines:
        size -= 1
    return wrap(title, width_px, size), size


def signed(x: float) -> str:
    """A signed number to two decimals, or to two significant digits where two decimals would say ±0.00:
    0.123 -> "+0.12", -0.00042 -> "-4.2e-04", 0 -> "+0.00"."""
    x = float(x)
    return f"{x:+.2f}" if x == 0 or abs(x) >= 0.005 else f"{x:+.1e}"


def small(x: float) -> str:
    """A share to two decimals, or to two significant digits below 0.01 (1 / 1,082 is 0.00092, not 0.00)."""
    return f"{x:.2f}" if x == 0 or abs(x) >= 0.01 else f"{x:.2g}"


def apart(a: float, b: float, least: int = 2, most: int = 4) -> tuple[str, str]:
    """Two numbers compared in a sentence, with the fewest decimals (``least`` … ``most``) that tell them apart:
    (0.0123, 0.0141) -> ("0.012", "0.014"); equal ones keep ``least``."""
    for digits in range(least, most + 1):
        x, y = f"{a:.{digits}f}", f"{b:.{digits}f}"
        if x != y:
            return x, y
    return f"{a:.{least}f}", f"{b:.{least}f}"


def pct(x: float, digits: int = 0) -> str:
    """A share as a percentage (at least ``digits`` decimals) that never says 100 % for less than all of it, nor 0 %
    for more than nothing: 0.998 -> "99.8%", 0.0004 -> "<0.1%", 0.5 -> "50%" (digits=1: "50.0%")."""
    x = float(x)
    text = f"{x:.{digits}%}"
    if float(text[:-1]) == 100 and x < 1:
        for more in range(digits + 1, max(digits, 2) + 2):  # at most 3 decimals
            text = f"{x:.{more}%}"
            if not text.startswith("100"):
                return text
        return ">99.9%"
    if float(text[:-1]) == 0 and x > 0:
        smallest = 10.0 ** -max(digits, 1)
        return f"{x:.{max(digits, 1)}%}" if x * 100 >= smallest / 2 else f"<{smallest:g}%"
    return text


def names(items: list[str]) -> str:
    """'a', 'a and b', 'a, b and c'."""
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def mask_fillers(models: list[str]) -> str:
    """The sentence saying which of the compared models can predict masked words."""
    if not models:
        return "None of these models fills in [MASK], so masked-word predictions need another model."
    subject = "it fills" if len(models) == 1 else "they fill"
    return f"For masked-word predictions, use {names(models)}: only {subject} in [MASK]."


def slide_plot_px(theme, x_labels=(), y_labels=(), *, above: int = 0, band: int = 0) -> tuple[float, float]:
    """(width, height) px a slide's plot area keeps inside its box (``theme.box``, laid out at 1×) once the title
    block (a title line and two subtitle lines), ``above`` lines of panel titles, the upright ``x_labels`` with
    an axis title below, the ``y_labels`` with an axis title at the left and a colour bar at the right are drawn:
    what tick budgets on a slide are computed from, so that labels at 18 pt never overprint. ``band``: px of
    the box's height already used by something else (a sink column's title, a legend)."""
    s = theme.sizes
    width, height = theme.box
    longest = max((len(plain_label(str(label))) for label in x_labels), default=4)
    widest = max((len(plain_label(str(label))) for label in y_labels), default=4)
    top = 1.25 * s.title + 2.5 * s.axis_title + 36 + 1.4 * s.axis_title * above
    below = CHAR_EM * s.tick * min(longest, 12) + 16 + 1.6 * s.axis_title
    left = CHAR_EM * s.tick * min(widest, 12) + 16 + 1.6 * s.axis_title
    right = 5.5 * s.tick + 24  # a colour bar with its numbers
    return width - left - right, height - top - below - band
