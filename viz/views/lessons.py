"""Views of the lessons: positional encodings, the permutation lab, and the lessons page."""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from model.analysis.norms import relative_change
from model.experiments import with_mask
from model.io.catalog import ModelSpec
from model.observe import Observation, position_table
from model.positional import sinusoid_dims, sinusoidal_table
from viz.figures import (
    change_bars,
    encoding_curves,
    encoding_heatmap,
    heatmap_panels,
    metric_spread,
    position_similarity,
    prediction_bars,
    scaling_figure,
)
from viz.figures.common import Theme, with_subtitle
from viz.views.attention import subtitle
from viz.views.base import Captioned, Source, ViewUnavailableError, view
from viz.views.captions import (
    clipped_table,
    permutation,
    quoted,
    quoted_at,
    scaling,
    wavelengths,
)
from viz.views.head_captions import ablation as ablation_caption
from viz.views.head_captions import heads_off, prediction_check, spread
from viz.views.rope import rope_views


def _formula_width(src: Source) -> int:
    d = src.loaded.model.cfg.d_model
    return d - d % 2  # the formula needs an even width


@view("pe.formula", page="positional")
def pe_formula(src: Source, theme: Theme, *, n_positions: int = 128):
    d = _formula_width(src)
    return encoding_heatmap(
        sinusoidal_table(n_positions, d).numpy(), title=f"Sinusoidal encoding, d = {d}", theme=theme, split_pairs=True
    )


@view("pe.curves", page="positional")
def pe_curves(src: Source, theme: Theme, *, n_positions: int = 128, dims: tuple[int, ...] = ()):
    """Chosen dimensions of the formula as curves; ``dims`` empty: four whose wavelengths spread out."""
    d = _formula_width(src)
    dims = tuple(x for x in dims if 0 <= x < d) if dims else tuple(sinusoid_dims(d, n_positions))
    if not dims:
        raise ViewUnavailableError("pick at least one dimension to plot")
    table = sinusoidal_table(n_positions, d).numpy()
    fig = encoding_curves(
        table, list(dims), title="Each dimension is a sinusoid; its wavelength grows with the dimension", theme=theme
    )
    return Captioned(fig, wavelengths(sorted(dims), d))


@view("pe.similarity", page="positional")
def pe_similarity(src: Source, theme: Theme, *, n_positions: int = 128):
    table = sinusoidal_table(n_positions, _formula_width(src)).numpy()
    return position_similarity(table, title="PE(i)·PE(j): nearby positions look alike", theme=theme)


MAX_TABLE_ROWS = 8192  # longer tables (a random model may allow 65,536 positions) show their first rows


def kind_is_table(cfg) -> bool:
    """Whether the model adds a position table (drawn whole) rather than rotating q and k."""
    return cfg.positional in ("sinusoidal", "learned")


def robust_limit(table: np.ndarray, q: float = 0.99) -> float:
    """The colour limit for a table with outliers: the q-quantile of |value| (never 0)."""
    return float(np.quantile(np.abs(table), q)) or float(np.abs(table).max()) or 1.0


@view("pe.model", page="positional")
def pe_model(src: Source, theme: Theme):
    """The positional encoding this model really uses (a table, or RoPE's rotation angles)."""
    cfg = src.loaded.model.cfg
    text = min(src.obs.n_tokens_full, cfg.max_seq_len)  # a long text's every position, not only the first kept
    rows = min(cfg.max_seq_len, MAX_TABLE_ROWS) if kind_is_table(cfg) else max(text, 64)
    kind, real = position_table(src.loaded.model, rows, length=text)  # a scaled RoPE's angles for this text
    name = src.loaded.name
    cut = ""
    if real.shape[0] < cfg.max_seq_len:
        cut = f" Shown: the first {real.shape[0]} of {cfg.max_seq_len} positions."
    if kind == "sinusoidal":
        fig = encoding_heatmap(real, title=f"The table {name} adds (the formula)", theme=theme, split_pairs=True)
        return Captioned(fig, f"{real.shape[0]} positions × {real.shape[1]} dimensions: what the model adds.{cut}")
    if kind == "learned":
        clip = robust_limit(real)
        return {
            "learned": Captioned(
                encoding_heatmap(real, title=f"{name}: learned position table", theme=theme, zmax=clip),
                clipped_table(real, clip, f"{name}'s learned table") + cut,
            ),
            "sinusoidal": encoding_heatmap(
                sinusoidal_table(real.shape[0], real.shape[1] - real.shape[1] % 2).numpy(),
                title="Sinusoidal table of the same size",
                theme=theme,
                split_pairs=True,
            ),
            "similarity": position_similarity(real, title=f"{name}, learned: PE(i)·PE(j)", theme=theme),
        }
    if kind == "rope":
        return rope_views(src, theme, real, text)
    raise ViewUnavailableError(
        "This model has no positional encoding: without it, attention cannot tell word order apart "
        "(see the permutation lab)."
    )


@view("perm", page="positional")
def perm(src: Source, theme: Theme, *, layer: int = 0, head: int = 0, positions_on: bool = False, seed: int = 0):
    """Shuffle, run, un-shuffle: the three patterns of one head; with positions off, the model's real pattern
    (positions on, original order) beside them, since the 'original' then is not what the model does."""
    res = src.permutation(seed, positions_on, layer)
    tokens = src.obs.tokens
    shuffled_tokens = [tokens[i] for i in res["perm"]]
    cfg = src.loaded.model.cfg
    # a table, RoPE, or order inside the scores (T5's and MPNet's bias, DeBERTa's terms): what the switch removes
    has_positions = cfg.positional != "none" or bool(cfg.relative_bias or cfg.disentangled)
    diffs = np.abs(res["unshuffled"] - res["original"]).max(axis=(1, 2))  # (H,): per head of the layer
    panels = [
        (res["original"][head], tokens, tokens, "original order" + ("" if positions_on else ", no positions")),
        (res["shuffled"][head], shuffled_tokens, shuffled_tokens, "shuffled input"),
        (res["unshuffled"][head], tokens, tokens, "shuffled, then un-shuffled"),
    ]
    real_gap = None
    if has_positions and not positions_on:
        # with positions on: the sidebar may have switched them off for every page, the lab's "real" keeps them
        seen = src.obs if src.options.positions else src.other(options=replace(src.options, positions=True))[0]
        real = seen.patterns[layer, head]
        real_gap = float(np.abs(real - res["original"][head]).max())
        panels.append((real, tokens, tokens, "the model's real pattern (positions on)"))
    fig = heatmap_panels(
        panels,
        title=f"Permutation lab: layer {layer}, head {head}, positions {'on' if positions_on else 'off'}",
        theme=theme,
        on_slide=(0, 2),  # a slide: the two patterns the lesson says are equal (or, positions or a mask on, are not)
    )
    window = cfg.sliding_window if cfg.is_sliding(layer) else 0
    caption = permutation(
        diffs, head, positions_on=positions_on, has_positions=has_positions, real_gap=real_gap,
        causal=src.obs.causal, window=window,
    )  # fmt: skip
    return Captioned(with_subtitle(fig, f"shuffle seed {seed} · " + subtitle(src), theme), caption)


@view("lesson.predict", page="lessons")
def lesson_predict(src: Source, theme: Theme, *, layer: int = 0, head: int = 0, query: int = 1, guess: int = 0):
    """The answer to "which token will the query attend to most?": its row as bars, the guess in blue."""
    obs = src.obs
    if not (0 <= layer < obs.n_layers and 0 <= head < obs.n_heads):
        raise ViewUnavailableError(f"the model has {obs.n_layers} layers × {obs.n_heads} heads")
    query, guess = (min(max(i, 0), obs.n_tokens - 1) for i in (query, guess))
    row = obs.patterns[layer, head, query]
    fig = change_bars(
        obs.tokens,
        row,
        title=f"Where {quoted_at(obs.tokens, query)} looks: layer {layer}, head {head}",
        theme=theme,
        x_title="attention weight",
        highlight=guess,
    )
    caption = prediction_check(obs.tokens, row, query, guess)
    return Captioned(with_subtitle(fig, "your guess in blue · " + subtitle(src), theme), caption)


@view("lesson.scaling", page="lessons")
def lesson_scaling(src: Source, theme: Theme):
    demo = src.scaling()
    n, samples = int(demo["n"]), int(demo["samples"])
    setup = f"{n} queries × {n} keys, entries N(0, 1), {samples} draws per d_k"
    return Captioned(with_subtitle(scaling_figure(demo, theme=theme), setup, theme), scaling(demo, n, samples))


@view("lesson.spread", page="lessons")
def lesson_spread(src: Source, theme: Theme, *, metric: str = "previous"):
    rnd = src.metrics(spec=ModelSpec("reinit", base=src.spec, seed=0))
    if metric not in src.obs.metrics:
        raise ValueError(f"unknown metric {metric!r}")
    values = {src.loaded.name: src.obs.metrics[metric], "random init, same config": rnd[metric]}
    fig = metric_spread(values, metric, title=f"{metric} per head: trained vs random init", theme=theme)
    return Captioned(with_subtitle(fig, subtitle(src), theme), spread(values, metric))


def ablated(src: Source, ablate: tuple) -> tuple[Observation, Observation, tuple]:
    """This text with ``ablate``'s heads on and with them off, and the heads off in both: those the options already
    switch off (a notebook's ``Options(ablate=…)``) stay off, so the change is ``ablate``'s heads' alone."""
    kept = tuple(h for h in src.options.ablate if h not in set(ablate))
    on, off = replace(src.options, ablate=kept), replace(src.options, ablate=kept + tuple(ablate))
    return (src.obs if on == src.options else src.other(options=on)[0]), src.other(options=off)[0], kept


@view("lesson.ablation", page="lessons")
def lesson_ablation(src: Source, theme: Theme, *, ablate: tuple = ((0, 0),)):
    on, off, also = ablated(src, ablate)
    change = relative_change(on.hidden, off.hidden)
    fig = change_bars(src.obs.tokens, change, title=f"Output change with {heads_off(ablate)}", theme=theme)
    caption = ablation_caption(src.obs.tokens, change, ablate, also)
    return Captioned(with_subtitle(fig, subtitle(src), theme), caption)


def mask_positions(src: Source, pick: int | None = None) -> tuple[list[int], bool]:
    """(positions to predict, whether they were typed as the mask token): the typed masks, else ``pick``
    (default: the first ordinary token)."""
    tok, obs = src.loaded.tokenizer, src.obs
    mask_id = tok.token_id(tok.mask_token or "[MASK]")
    typed = [i for i, t in enumerate(obs.ids) if t == mask_id]
    if typed:
        return typed, True
    ordinary = [i for i in range(len(obs.ids)) if not obs.special[i]]
    if pick is not None and pick in ordinary:
        return [pick], False
    return ordinary[:1], False


def _predictions(src: Source, positions: list[int], ablate: tuple):
    if src.loaded.has_lm:
        raise ViewUnavailableError(
            f"{src.loaded.name} is a decoder: it predicts the next token rather than a masked one. See the Next "
            "token page."
        )
    if not src.loaded.has_mlm:
        files = src.loaded.report.files
        if files:  # an encoder read from files: the files hold no head, which the model may well have had
            raise ViewUnavailableError(
                f"{src.loaded.name}'s files ({', '.join(files[:3])}{' …' if len(files) > 3 else ''}) hold no "
                "masked-language-model head: they were saved without it (a BertModel rather than a BertForMaskedLM, "
                "say). Open a folder saved with its head to see its guesses; the bundled model has one."
            )
        raise ViewUnavailableError(f"{src.loaded.name} has no masked-language-model head; the bundled model has one.")
    if not positions:
        raise ViewUnavailableError("Type some text (with [MASK] where a word should be guessed).")
    tok = src.loaded.tokenizer
    ids = with_mask(src.obs.ids, positions, tok.token_id(tok.mask_token or "[MASK]"))
    return src.predictions(ids, tuple(positions), tuple(ablate))


@view("lesson.ablation_predictions", page="lessons")
def lesson_ablation_predictions(src: Source, theme: Theme, *, ablate: tuple = ((0, 0),)):
    positions, _ = mask_positions(src)
    if not ablate:
        raise ViewUnavailableError("switch off at least one head")
    figures = {}
    for part, off, label in (("before", (), "all heads"), ("after", tuple(ablate), heads_off(ablate))):
        (prediction, *_) = _predictions(src, positions, off)
        figures[part] = prediction_bars(
            prediction.tokens, prediction.probs, title=f"position {positions[0]}: {label}", theme=theme
        )
    return figures


@view("lesson.mlm", page="lessons")
def lesson_mlm(src: Source, theme: Theme, *, pick: int = -1):
    positions, typed = mask_positions(src, None if pick < 0 else pick)
    figures = {}
    for prediction in _predictions(src, positions, ()):
        truth = "" if typed else f" (was {quoted(src.obs.tokens[prediction.position])})"
        figures[str(prediction.position)] = prediction_bars(
            prediction.tokens, prediction.probs, title=f"position {prediction.position}{truth}", theme=theme
        )
    return figures
