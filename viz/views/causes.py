"""Which parts cause the answer: the logit lens, direct logit attribution, activation patching and a head's QK/OV
circuits. Every caption is computed from the numbers its figure draws."""

from __future__ import annotations

import numpy as np

from model.analysis.lens import OUTPUT, attribution_problem
from viz.figures.causes import lens_grid, rank_line, signed_grid
from viz.figures.common import Theme, with_subtitle
from viz.figures.text import pct, signed, token_labels
from viz.views.attention import subtitle
from viz.views.base import Captioned, Source, ViewUnavailableError, view
from viz.views.captions import quoted

LENS_WINDOW = 16


def token_text(src: Source, i: int) -> str:
    return src.loaded.tokenizer.id_to_token(int(i))


def one_token(src: Source, text: str) -> int | None:
    """The token a typed answer names: its first token (a leading space matters for byte-level BPE: “ Mary”)."""
    if not text:
        return None
    ids = src.loaded.tokenizer.inner.encode(text, add_special_tokens=False).ids
    if not ids:
        raise ViewUnavailableError(f"“{text}” gives no token; type a word the model knows.")
    return int(ids[0])


def answer_position(src: Source, ids=None) -> int:
    """Where the answer is read: the last position of a decoder, the first [MASK] of a masked-language model."""
    if src.loaded.has_lm:
        return len(src.obs.ids if ids is None else ids) - 1
    mask = src.loaded.tokenizer.mask_token
    ids = list(src.obs.ids if ids is None else ids)
    mask_id = src.loaded.tokenizer.inner.token_to_id(mask) if mask else None
    if getattr(src.loaded.model, "mlm", None) is None:
        raise ViewUnavailableError(
            f"{src.loaded.name} has no output head to read an answer from. Choose SmolLM2-135M-Instruct (a decoder) "
            "or the bundled MLM (type [MASK] where the answer goes)."
        )
    if mask_id is None or mask_id not in ids:
        raise ViewUnavailableError(
            f"Put {mask or '[MASK]'} where the answer goes: a masked-language model reads it there."
        )
    return ids.index(mask_id)


def guesses(src: Source, position: int, k: int = 2) -> list[int]:
    """The model's k likeliest tokens at a position (from the lens's last row: the model's own output)."""
    return [int(t) for t in src.lens((position,), None).top_ids[-1, 0, :k]]


@view("causes.lens", page="causes")
def lens_view(src: Source, theme: Theme, *, target: str = "", window: int = LENS_WINDOW):
    """The logit lens: every layer's stream read through the final norm and the head, at the last positions."""
    pos = answer_position(src)
    n = src.obs.n_tokens
    start = max(0, min(pos - window // 2, n - window)) if not src.loaded.has_lm else max(0, n - window)
    positions = tuple(range(start, min(n, start + window)))
    lens = src.lens(positions, one_token(src, target) if target else OUTPUT)  # one pass, either way
    wanted = lens.target if lens.target != OUTPUT else int(lens.top_ids[-1, positions.index(pos), 0])
    words = np.vectorize(lambda i: token_text(src, i), otypes=[object])(lens.top_ids)  # (R, P, k)
    probs = lens.top_probs
    hover = np.empty(words.shape[:2], dtype=object)
    for r, c in np.ndindex(hover.shape):
        hover[r, c] = "<br>".join(f"{j + 1}. {words[r, c, j]!r} {pct(probs[r, c, j])}" for j in range(words.shape[2]))
    labels = token_labels([src.obs.tokens[p] for p in positions], theme.positions)
    kind = "next token after" if src.loaded.has_lm else "token at"
    grid = lens_grid(
        words[..., 0],
        probs[..., 0],
        hover,
        lens.labels,
        labels,
        title=f"Logit lens: the likeliest {kind} each position, layer by layer",
        theme=theme,
    )
    col = positions.index(pos)
    top = [int(t) for t in lens.top_ids[:, col, 0]]
    settles = len(top) - 1
    while settles > 0 and top[settles - 1] == top[-1]:
        settles -= 1
    where = "already after the embeddings" if settles == 0 else f"from layer {settles - 1} on"
    grid_caption = (
        f"Each row reads the residual stream after one layer through the final norm and the head, as if that layer "
        f"were the last; the bottom row is the model's output. At position {pos} ({quoted(src.obs.tokens[pos])}) "
        f"the output is {quoted(token_text(src, top[-1]))} ({pct(probs[-1, col, 0])}), the top guess {where}. "
        "Hover a cell for its top five."
    )
    ranks = lens.target_rank[:, col]
    name = token_text(src, wanted)
    short = ["emb.", *(f"L{i}" for i in range(len(ranks) - 1))]
    line = rank_line(ranks, short, token=quoted(name), title=f"Rank of {quoted(name)} at position {pos}", theme=theme)
    rows = [0]
    for cut in (100, 10, 1):  # the first layer it enters the top 100, the top 10, the top
        hit = np.nonzero(ranks <= cut)[0]
        if hit.size and hit[0] not in rows:
            rows.append(int(hit[0]))
    marks = [f"{ranks[r]:,} {lens.labels[r] if r else 'after the embeddings'}" for r in rows]
    rank_caption = (
        f"{quoted(name)} ranks {', '.join(marks)} among {src.loaded.model.cfg.vocab_size:,} tokens; "
        f"the output ranks it {ranks[-1]:,} ({pct(lens.target_prob[-1, col])})."
    )
    return {
        "grid": Captioned(with_subtitle(grid, subtitle(src), theme), grid_caption),
        "rank": Captioned(with_subtitle(line, subtitle(src), theme), rank_caption),
    }


def answer_and_foil(src: Source, answer: str, foil: str, position: int, corrupted_top: int | None = None):
    """(answer id, foil id or None): typed ones, else the model's top guess against its second (or against the
    corrupted run's top guess when it differs)."""
    if answer:
        return one_token(src, answer), one_token(src, foil)
    top = guesses(src, position)
    if foil:
        return top[0], one_token(src, foil)
    other = corrupted_top if corrupted_top is not None and corrupted_top != top[0] else top[1]
    return top[0], other


def signed_parts(values: np.ndarray, names: list[str], k: int = 3) -> tuple[str, str]:
    order = np.argsort(-values)
    up = [f"{names[i]} ({signed(values[i])})" for i in order[:k] if values[i] > 0]
    down = [f"{names[i]} ({signed(values[i])})" for i in order[::-1][:k] if values[i] < 0]
    return ", ".join(up) or "none", ", ".join(down) or "none"


@view("causes.attribution", page="causes")
def attribution_view(src: Source, theme: Theme, *, answer: str = "", foil: str = ""):
    """Each head's and feed-forward's direct share of the answer's logit (minus the foil's) at the last position."""
    problem = attribution_problem(src.loaded.model)
    if problem:
        raise ViewUnavailableError(f"{src.loaded.name}: {problem}. SmolLM2-135M-Instruct is such a model.")
    pos = answer_position(src)
    target, other = answer_and_foil(src, answer, foil, pos)
    dla = src.logit_attribution(target, other, pos)
    L, H = dla.heads.shape
    cross = dla.cross_heads  # (L, H): an encoder–decoder's decoder, its cross-attention heads beside its own
    parts = [dla.heads, *([] if cross is None else [cross]), dla.mlps[:, None]]
    grid = np.concatenate(parts, axis=1)  # (L, H [+ H] + 1)
    ids = np.stack(np.meshgrid(np.arange(L), np.arange(grid.shape[1]), indexing="ij"), axis=-1)  # (L, C, 2)
    ids[:, H:, 1] = -1  # the cross-attention and feed-forward columns open no head of the page
    what = f"{quoted(token_text(src, target))}" + (f" − {quoted(token_text(src, other))}" if other is not None else "")
    heads = dla.heads if cross is None else np.concatenate([dla.heads, cross], axis=1)
    head_top = float(np.abs(heads).max()) or 1.0
    clipped = float(np.abs(dla.mlps).max()) > 1.5 * head_top  # a feed-forward would wash the heads out
    fig = signed_grid(
        grid,
        [f"L{i}" for i in range(L)],
        [*(f"H{h}" for h in range(H)), *(f"xH{h}" for h in range(H) if cross is not None), "FF"],
        title=f"Direct logit attribution: who writes {what} at position {pos}",
        value_name="logit",
        zmax=head_top if clipped else None,
        cell_ids=ids,
        where="layer %{y}, %{x}",
        x_title="head (xH: cross-attention; FF: the layer's feed-forward)" if cross is not None else
        "head (FF: the layer's feed-forward)",
        y_title="layer",
        theme=theme,
    )  # fmt: skip
    names = [f"L{i}H{c}" if c < H else f"L{i} cross H{c - H}" for i in range(L) for c in range(heads.shape[1])]
    up, down = signed_parts(heads.ravel(), names)
    best_ff = int(np.argmax(np.abs(dla.mlps)))
    rest = dla.embed + dla.attn_biases.sum() + dla.norm_bias + dla.out_bias
    biases = "embeddings, attention biases, the final norm's bias" + (", the output bias" if dla.out_bias else "")
    source = "" if cross is None else f", the cross-attention heads (what the source gives) {cross.sum():+.2f}"
    caption = (
        f"The {'logit difference ' if other is not None else 'logit of '}{what} at position {pos} is "
        f"{dla.logit:.2f}; the parts drawn and the rest ({rest:+.2f}: {biases}) sum to {dla.total:.2f}, through the "
        f"final norm frozen at this text's scale. Heads for it: {up}; against it: {down}. The heads add "
        f"{dla.heads.sum():+.2f} in all{source}, the feed-forward layers {dla.mlps.sum():+.2f} (the largest "
        f"either way: layer {best_ff}, {dla.mlps[best_ff]:+.2f}). Direct effects only: a head that acts through "
        "later layers scores little here (patching measures that). Click a head to open it."
        + (
            f" The colour scale ends at ±{signed(head_top)[1:]}, the heads' largest: feed-forward cells beyond it are "
            "drawn at full colour (hover for the value)."
            if clipped
            else ""
        )
    )
    return Captioned(with_subtitle(fig, subtitle(src), theme), caption)


def effective_rank(sv: np.ndarray, share: float = 0.9) -> int:
    """How many singular directions hold ``share`` of Σσ²."""
    energy = np.cumsum(sv**2) / max(float(np.sum(sv**2)), 1e-30)
    return int(np.searchsorted(energy, share) + 1)
