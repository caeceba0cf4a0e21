"""Attribution patching (activation patching's one-pass estimate) and path patching (one head's effect along one
path) in the app: the same prompts, answer and grids as activation patching (viz/views/patching.py). Captions are
computed from the grids; the estimate is compared with real patching wherever that has been run."""

from __future__ import annotations

import numpy as np

from model.analysis.patching import HEAD_KIND, PATCH_KINDS, Patching
from viz.figures.charts import agreement_scatter
from viz.figures.common import Theme, with_subtitle
from viz.views.attention import subtitle
from viz.views.base import Captioned, Source, ViewUnavailableError, view
from viz.views.patching import SCORES, patch_metric, patching_figures

RECEIVERS = ("logits", "queries", "keys", "values")


def cell_names(kind: str, result: Patching, tokens: list[str]) -> list[str]:
    """What each cell of a kind's grid is, row by row: "L3H2", or "L3 at 'Mary'·5"."""
    L, C = result.raw[kind].shape
    if kind == HEAD_KIND:
        return [f"L{i}H{h}" for i in range(L) for h in range(C)]
    return [f"L{i} at {tokens[p]!r}·{p}" for i in range(L) for p in range(C)]


def agreement(estimate: Patching, real: Patching, kind: str, names: list[str]) -> tuple[float, str]:
    """Pearson's r between the estimate and real patching over a kind's cells, and the cell they differ most on."""
    a, b = real.recovered(kind).ravel(), estimate.recovered(kind).ravel()
    keep = np.isfinite(a) & np.isfinite(b)
    r = float(np.corrcoef(a[keep], b[keep])[0, 1]) if keep.sum() > 2 and a[keep].std() and b[keep].std() else np.nan
    worst = int(np.nanargmax(np.abs(a - b)))
    return r, f"{names[worst]} (patched {a[worst]:+.2f}, estimated {b[worst]:+.2f})"


@view("causes.attribution_patching", page="causes")
def attribution_patching_view(
    src: Source,
    theme: Theme,
    *,
    corrupted: str = "",
    answer: str = "",
    foil: str = "",
    kinds: tuple = PATCH_KINDS,
    score: str = SCORES[0],
):
    """Activation patching's grids estimated from one forward and one backward pass, beside real patching's
    results where they have been run."""
    ids, metric = patch_metric(src, corrupted, answer, foil, score)
    estimate = src.attribution_patching(tuple(ids), metric, tuple(kinds))
    lead = (
        "Each cell: how much of the clean answer that one clean activation would bring back, estimated to first "
        "order, (clean − corrupted activation) · the metric's gradient in the corrupted run, for every cell at once "
        "from one forward and one backward pass"
    )
    grids = patching_figures(src, theme, estimate, ids, kinds, lead=lead, title="Attribution patching:")
    real = src.patching_kept(tuple(ids), metric, tuple(kinds))
    out = {}
    for kind in kinds:
        names = cell_names(kind, estimate, list(src.obs.tokens))
        if real is None:
            note = " Run activation patching on these prompts to see how close the estimate comes."
            out[kind] = Captioned(grids[kind].figure, grids[kind].caption + note)
            continue
        out[kind] = grids[kind]
        r, worst = agreement(estimate, real, kind, names)
        fig = agreement_scatter(
            real.recovered(kind),
            estimate.recovered(kind),
            names,
            x_title="activation patching (recovered)",
            y_title="attribution patching (estimate)",
            title="The estimate against real patching, cell by cell",
            theme=theme,
        )
        verdict = "a good guide" if r >= 0.9 else "a rough guide" if r >= 0.6 else "a poor guide"
        caption = (
            f"Each dot is one cell of the grid above: real patching across, the estimate up; on the dashed line they "
            f"agree. Pearson's r = {r:.2f} over {np.isfinite(real.recovered(kind)).sum()} cells: here the estimate "
            f"is {verdict}. It is furthest off at {worst}, where the model is least linear between that cell and "
            "the answer."
        )
        out[f"{kind}.agreement"] = Captioned(with_subtitle(fig, subtitle(src), theme), caption)
    return out


def receivers_of(src: Source, what: str, heads: str) -> list[tuple[int, int, str]] | str:
    """The receivers the page names: "logits", or heads typed as "L9H6, L9H9" read through their q, k or v."""
    if what == "logits":
        return "logits"
    if what not in RECEIVERS:
        raise ViewUnavailableError(f"Send the paths to one of: {', '.join(RECEIVERS)}.")
    cfg = src.loaded.model.cfg
    found = []
    for part in heads.replace(";", ",").split(","):
        part = part.strip().upper().replace(" ", "")
        if not part:
            continue
        try:
            layer, head = (int(x) for x in part.removeprefix("L").split("H"))
        except ValueError:
            raise ViewUnavailableError(f"“{part}” is not a head: write heads as L9H6, separated by commas.") from None
        if not (0 <= layer < cfg.n_layers and 0 <= head < cfg.n_heads):
            raise ViewUnavailableError(
                f"L{layer}H{head} is not in this model ({cfg.n_layers} layers × {cfg.n_heads} heads)."
            )
        found.append((layer, head, what[0]))
    if not found:
        raise ViewUnavailableError("Name the receiver heads (e.g. L9H6, L9H9): the paths end in their " + what + ".")
    return found


@view("causes.paths", page="causes")
def paths_view(
    src: Source,
    theme: Theme,
    *,
    corrupted: str = "",
    answer: str = "",
    foil: str = "",
    score: str = SCORES[0],
    receivers: str = "logits",
    receiver_heads: str = "",
):
    """Path patching: each head as the sender, its clean output reaching the answer only along one path."""
    ids, metric = patch_metric(src, corrupted, answer, foil, score)
    rec = receivers_of(src, receivers, receiver_heads)
    result = src.path_patching(tuple(ids), metric, rec if isinstance(rec, str) else tuple(rec))
    if isinstance(rec, str):
        path = "straight to the logits (through the residual stream and the feed-forward layers, no other head)"
        title = "Path patching: each head straight to the logits"
    else:
        named = ", ".join(f"L{lay}H{h}" for lay, h, _ in rec)
        path = f"only through the {receivers} of {named}"
        title = f"Path patching: each head through the {receivers} of {named}"
    lead = (
        f"Each cell: one head's clean output in the corrupted run, every other head frozen at its corrupted value, "
        f"its effect reaching the answer {path}; 1 brings the clean answer back"
        + ("" if isinstance(rec, str) else ". Blank heads come at or after the receivers and have no such path")
    )
    figs = patching_figures(src, theme, result, ids, (HEAD_KIND,), lead=lead, title="Path patching:", heads=title)
    return {"paths": figs[HEAD_KIND]}
