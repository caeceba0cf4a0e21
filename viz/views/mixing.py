"""Views that go beyond raw attention weights: context mixing per layer (norm-based, ALTI, value zeroing), rollout
and flow of one token through the layers, and a panel where every method ranks the tokens one token draws from
(with gradients); the page's sinks and head types are viz/views/sinks.py. Every caption is computed from the numbers
drawn.
"""

from __future__ import annotations

import numpy as np

from model.analysis.flow import MAX_FLOW_TOKENS, aggregate, rollout_layers, row_shares
from model.analysis.gradients import targets_for
from model.masks import reachable
from viz.figures import heads_grid, heatmap_panels
from viz.figures.common import Theme, with_subtitle
from viz.figures.mixing import agreement_matrix, method_rows
from viz.figures.text import pct
from viz.views.attention import subtitle
from viz.views.base import Captioned, Source, ViewUnavailableError, view
from viz.views.captions import quoted, quoted_at, rank_correlation

#: value zeroing recomputes every layer once per token: offered up to this many tokens (about 3 s on MiniLM)
MAX_ZEROING_TOKENS = 160
IG_TRUSTED_GAP = 0.05  # the caption says so when IG's completeness gaps pass this share
MIN_RANKED = 3  # visible tokens a rank agreement needs
TARGET_NAMES = {
    "mlm": "masked-token logit",
    "next": "next-token logit",
    "state": "final state (projected on itself)",
}


def _layer(src: Source, layer: int) -> None:
    if not 0 <= layer < src.obs.n_layers:
        raise ViewUnavailableError(f"the model has {src.obs.n_layers} layers; there is no layer {layer}")


def _zeroing(src: Source) -> bool:
    return src.obs.n_tokens <= MAX_ZEROING_TOKENS


def method_matrices(src: Source, layer: int, across: bool) -> dict[str, np.ndarray]:
    """{method: (N, N) row shares} for one layer, or through the layers up to it (``across``)."""
    mix = src.mixing(_zeroing(src))
    obs = src.obs
    if across:
        out = {
            "attention rollout": rollout_layers(obs.patterns)[layer],
            "norm-based rollout": aggregate(mix.norm)[layer],
            "ALTI": aggregate(mix.alti)[layer],
        }
        if mix.value_zeroing is not None:
            out["value zeroing"] = aggregate(mix.value_zeroing)[layer]
        return out
    out = {"attention (head mean)": mix.attention[layer], "norm-based ‖Σₕ α f(x)‖": row_shares(mix.norm[layer])}
    out["ALTI"] = mix.alti[layer]
    if mix.value_zeroing is not None:
        out["value zeroing"] = mix.value_zeroing[layer]
    return out


def allowed_cells(src: Source, layer: int | None = None, across: bool = True) -> np.ndarray:
    """(N, N) bool: the cells a query can draw from in ``layer`` (its causal triangle and sliding window), or through
    the layers up to it (``across``; ``layer`` None: the last)."""
    cfg = src.loaded.model.cfg
    last = cfg.n_layers - 1 if layer is None else layer
    return reachable(cfg, src.obs.n_tokens, bool(src.obs.causal), last, through=across).numpy()


@view("mixing", page="mixing")
def mixing(src: Source, theme: Theme, *, layer: int = 0, across: bool = False):
    """Raw attention beside norm-based attention, ALTI and value zeroing for one layer (or rolled out through the
    layers up to it), as row shares on one colour scale; the caption gives each method's rank correlation with
    the first panel over every cell a query can see."""
    _layer(src, layer)
    mats = method_matrices(src, layer, across)
    obs, hide = src.obs, src.hide_special
    tokens = obs.shown_tokens(hide)
    panels = [(obs.shown(m, hide), tokens, tokens, name) for name, m in mats.items()]
    where = f"through layers 0–{layer}" if across else f"layer {layer}"
    fig = heatmap_panels(panels, title=f"Who reads from whom, {where}: four measures", theme=theme, value_name="share")
    cells = allowed_cells(src, layer, across)
    names = list(mats)
    first = mats[names[0]][cells]
    rhos = {name: rank_correlation(first, mats[name][cells]) for name in names[1:]}
    caption = (
        f"Rank correlation with {names[0]} over the {int(cells.sum()):,} query–key cells the mask leaves visible: "
        + "; ".join(f"{name} ρ = {rho:.2f}" for name, rho in rhos.items())
        + "."
    )
    if not _zeroing(src):
        caption += (
            f" Value zeroing recomputes every layer once per token; it is offered up to {MAX_ZEROING_TOKENS} "
            f"tokens and this text has {obs.n_tokens}."
        )
    return Captioned(with_subtitle(fig, subtitle(src), theme), caption)


@view("mixing.heads", page="mixing")
def mixing_heads(src: Source, theme: Theme, *, layer: int = 0):
    """Norm-based attention of every head of one layer, ‖α f(x)‖ per cell on one scale (Kobayashi et al.)."""
    _layer(src, layer)
    mix, obs, hide = src.mixing(_zeroing(src)), src.obs, src.hide_special
    norms = np.stack([obs.shown(m, hide) for m in mix.norm_heads[layer]])
    fig = heads_grid(
        norms / max(float(norms.max()), 1e-12), obs.shown_tokens(hide), cols=min(4, obs.n_heads), theme=theme,
        title=f"Layer {layer}: ‖α·f(x)‖ per head (scaled to the largest cell)",
    )  # fmt: skip
    per_head = mix.norm_heads[layer].sum((-1, -2))
    top = int(per_head.argmax())
    low = int(per_head.argmin())
    caption = (
        f"Head {top} moves the most in total ({pct(per_head[top] / per_head.sum())} of the layer's summed norms), "
        f"head {low} the least ({pct(per_head[low] / per_head.sum())}): a head with strong weights on tokens "
        "whose values are short moves little."
    )
    return Captioned(with_subtitle(fig, subtitle(src), theme), caption)


def _query(src: Source, query: int) -> int:
    obs = src.obs
    if 0 <= query < obs.n_tokens:
        return query
    ordinary = np.flatnonzero(~obs.special)
    if not len(ordinary):
        return 0
    return int(ordinary[-1] if obs.causal else ordinary[0])  # a causal model's first token sees only itself


@view("rollout.token", page="rollout")
def rollout_token(src: Source, theme: Theme, *, query: int = -1):
    """One token after every layer: its rollout row (and its flow row for short texts), as Abnar & Zuidema draw
    them — rows are layers, columns the input tokens."""
    obs = src.obs
    i = _query(src, query)
    rows = [f"after L{layer}" for layer in range(obs.n_layers)]
    roll = rollout_layers(obs.patterns)[:, i]  # (L, N)
    panels = [(roll, rows, obs.tokens, "rollout")]
    if obs.n_tokens <= MAX_FLOW_TOKENS:
        panels.append((src.flow_token(i), rows, obs.tokens, "flow"))
    fig = heatmap_panels(
        panels, title=f"Where {quoted(obs.tokens[i])} (token {i}) draws from, layer by layer", theme=theme,
        value_name="share", shared_rows=True,
    )  # fmt: skip
    last = roll[-1]
    top = int(last.argmax())
    mine = f"After the last layer, rollout gives {quoted_at(obs.tokens, i)} {pct(last[i])} of itself"
    caption = (
        (f"{mine}, its largest share" if top == i else f"{mine} and {quoted(obs.tokens[top])} (token {top}) "
         f"{pct(last[top])}, its largest")
        + f"; after layer 0 it kept {pct(roll[0, i])} of itself."
    )  # fmt: skip
    if len(panels) == 1:
        caption += f" Flow is drawn up to {MAX_FLOW_TOKENS} tokens; this text has {obs.n_tokens}."
    return Captioned(with_subtitle(fig, subtitle(src), theme), caption)


def method_shares(src: Source, i: int, target: str) -> dict[str, np.ndarray]:
    """{method: (N,) shares of what token i draws from} for the comparison panel."""
    obs = src.obs
    last = obs.n_layers - 1
    mix = src.mixing(_zeroing(src))
    rows = {
        "attention (last layer)": mix.attention[last][i],
        "attention rollout": rollout_layers(obs.patterns)[last][i],
        "norm-based (last layer)": row_shares(mix.norm[last])[i],
        "ALTI (all layers)": aggregate(mix.alti)[last][i],
    }
    if mix.value_zeroing is not None:
        rows["value zeroing (all layers)"] = aggregate(mix.value_zeroing)[last][i]
    attribution = src.attribution(i, target)
    rows["gradient × input"] = row_shares(np.abs(attribution.grad_input))
    rows["integrated gradients"] = row_shares(np.abs(attribution.integrated))
    return rows


@view("mixing.compare", page="mixing")
def mixing_compare(src: Source, theme: Theme, *, query: int = -1, target: str = ""):
    """Every method's answer to "which tokens does this token draw from?", as shares per row, and their rank
    agreement (Spearman's ρ over the tokens the query can see; no agreement figure when it sees fewer than three)."""
    obs = src.obs
    i = _query(src, query)
    offered = targets_for(src.loaded.model)
    target = target if target in offered else offered[0]
    rows = method_shares(src, i, target)
    att = src.attribution(i, target)
    size = float(np.abs(att.integrated).sum())  # what the shares drawn are shares of
    delta = att.value - att.baseline_value
    # approximate when the sum misses f(x) − f(baseline), or the path's intervals miss their own, by > 5 %
    rough = att.gap > IG_TRUSTED_GAP * abs(delta) or att.misses > IG_TRUSTED_GAP * size
    names = list(rows)
    seen = np.flatnonzero(allowed_cells(src)[i])
    others = seen[seen != i]  # what the query can draw from besides itself
    label = quoted(obs.tokens[i])
    matrix = np.stack([rows[n] for n in names])
    table = method_rows(matrix, names, obs.tokens, title=f"What {label} (token {i}) draws from, by method", theme=theme)
    parts = {}
    if not len(others):
        ranking = f"{label} (token {i}) sees only itself: every method gives it all, so there is nothing to rank"
    else:
        # a method that gives every other token nothing (an ALTI row of zeros) ranks none of them first
        tops = {n: int(others[np.argmax(rows[n][others])]) for n in names if rows[n][others].max() > 0}
        votes: dict[int, int] = {}
        for j in tops.values():
            votes[j] = votes.get(j, 0) + 1
        if votes:
            best = max(votes, key=votes.get)
            ranking = (
                f"Leaving {label} itself aside, {votes[best]} of {len(names)} methods rank "
                f"{quoted(obs.tokens[best])} (token {best}) first"
            )
        else:
            ranking = f"Leaving {label} itself aside, no method gives another token anything"
        if len(tops) < len(names):
            ranking += f" ({', '.join(n for n in names if n not in tops)}: nothing to any other token)"
    if len(seen) >= MIN_RANKED:
        rho = np.array([[rank_correlation(rows[a][seen], rows[b][seen]) for b in names] for a in names])
        off = rho[~np.eye(len(names), dtype=bool)]
        spread = f"(from {off.min():.2f} to {off.max():.2f})"
        ranking += f"; mean rank agreement between methods ρ = {off.mean():.2f} {spread}"
        title = f"How the methods agree for {label}"
        parts["agreement"] = agreement_matrix(rho, names, title=title, theme=theme)
    elif len(others):
        ranking += f"; it sees {len(seen)} tokens, too few for a rank agreement (it needs {MIN_RANKED})"
    caption = (
        f"{ranking}. Gradients are for the {TARGET_NAMES[target]}"
        + (f" of {quoted(src.loaded.tokenizer.id_to_token(att.target_token))}" if target != "state" else "")
        + f"; integrated gradients from {att.steps} gradients along the path (more where the output moves "
        f"fastest): their sum misses f(x) − f(baseline) = {delta:+.2f} by {att.gap:.2f} (Σ|IG| = {size:.2f}; the "
        f"path's intervals miss their own by {att.misses:.2f} in all)."
        + (
            f" The output moves in steep steps along this path that {att.steps} gradients did not resolve: read "
            "the integrated gradients' shares as approximate."
            if rough
            else ""
        )
    )
    sub = f"gradients of the {TARGET_NAMES[target]} · " + subtitle(src)
    figures = {"methods": table, **parts}
    return {part: Captioned(with_subtitle(fig, sub, theme), caption) for part, fig in figures.items()}
