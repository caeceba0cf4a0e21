"""Every cache of the app, and the one place that loads models, decides the device and builds the context.

Models, observations, analyses and built views live in one cache shared by all sessions and bounded in bytes
(``viz/shell/budget.py``; ``ATTENTION_LAB_CACHE_MB``, default 2048): they hold up to hundreds of MB of arrays
at 512 tokens, so counting entries would not bound memory, and st.cache_data would copy (pickle) them on every
rerun. Their arrays are read-only, so sharing is safe. Cache keys name what the result depends on; arguments
starting with ``_`` are not part of the key (a model object, an observation) and are always determined by the
ones that are.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import streamlit as st
import torch

from model.analysis.find import Found
from model.analysis.find_long import found_whole
from model.analysis.flow import attention_flow, flow_from
from model.analysis.gradients import Attribution, attribute
from model.analysis.kinds import HeadKinds, long_kinds, observed_kinds
from model.analysis.long_heads import long_similarity
from model.analysis.mixing import KINDS as MIXING_KINDS
from model.analysis.mixing import Mixing, context_mixing
from model.analysis.scaling import scaling_demo
from model.analysis.similarity import cluster_order, head_similarity
from model.analysis.steps import observed_head_steps
from model.analysis.stream import Stream, residual_stream
from model.errors import CheckpointError
from model.experiments import induction_run, masked_predictions, padded_batch, permutation_check
from model.generate import generate, predictions_from_hidden, stop_tokens
from model.io.catalog import ModelSpec, load, reinit_of, stacked
from model.io.checkpoint import Questions, questions_at, upload_questions
from model.io.state import LoadedModel
from model.long import LongObservation
from model.memory import release_freed_memory
from model.observe import (
    ATTENTION_KINDS,
    Observation,
    Options,
    capture_bytes,
    expected_bytes,
    head_weights,
    kept_tokens,
    observe,
    observe_encoded,
)
from model.profile.store import Profile, read_profile
from model.text import encode_text
from viz.shell.cache import CACHE, shared
from viz.shell.context import PageContext
from viz.shell.gate import ByteGate, inflight_from_env
from viz.views import View, build


def _build_model(spec: ModelSpec, device: str, data: dict[str, bytes] | None) -> LoadedModel:
    """Load ``spec`` on ``device`` (not cached). A random re-init of another model starts from that model's cached
    copy, not a second load of its file."""
    if spec.kind == "reinit" and spec.base is not None:
        loaded = reinit_of(get_model(spec.base, "cpu", data), spec.seed)
    elif spec.kind in ("folder", "upload") and spec.stack in ("encoder", "decoder"):  # one stack of a T5 or BART:
        # the pair is read once, each source binds a copy of its decoder
        pair = get_model(replace(spec, stack="pair", source_text=""), "cpu", data)
        loaded = stacked(pair, spec)
    else:
        loaded = load(spec, data)
    if device != "cpu":
        loaded.model.to(device)
    release_freed_memory()  # a load's temporaries (SmolLM2's dequantisation: 0.5 GB) go back to the OS
    return loaded


@shared("Loading model…")
def get_model(spec: ModelSpec, device: str, _data: dict[str, bytes] | None = None) -> LoadedModel:
    """One loaded model per (spec, device), shared by all sessions (uploads are keyed by their digest)."""
    return _build_model(spec, device, _data)


# forward passes of all sessions run side by side up to this many bytes in flight (viz/shell/gate.py)
IN_FLIGHT = ByteGate(inflight_from_env())


def get_observation(spec: ModelSpec, device: str, text: str, options: Options, _loaded: LoadedModel) -> Observation:
    """This text's observation, kept once per (model, device, token ids, options): texts that truncate to the same
    tokens share one entry (the text, its offsets and notices are this text's). A patterns-only request is served
    by the full capture of the same tokens when that is kept, and a full capture replaces the patterns-only one."""
    cfg = _loaded.model.cfg
    enc, notices = encode_text(_loaded.tokenizer, text, kept_tokens(cfg, options), cfg.max_seq_len)

    def key(opts: Options) -> tuple:
        return ("observation", spec, device, enc.ids, opts)

    full = replace(options, kinds=ATTENTION_KINDS)
    served = options != full and set(options.kinds) <= set(full.kinds)  # the full capture holds what is asked
    obs = CACHE.peek(key(full)) if served else None
    if obs is None:

        def make() -> Observation:
            with st.spinner("Running the model…"), IN_FLIGHT.hold(expected_bytes(_loaded.model, enc, options)):
                return observe_encoded(_loaded.model, enc, notices, options, device)

        obs = CACHE.get(key(options), make)
        if options == full:
            CACHE.discard(key(replace(options, kinds=("pattern",))))
    if obs.text == enc.text and obs.notices == notices:
        return obs
    return replace(obs, text=enc.text, offsets=[tuple(o) for o in enc.offsets], truncated=enc.truncated,
                   n_tokens_full=enc.n_tokens_full, notices=notices)  # fmt: skip


@shared("Measuring the heads…")
def get_metrics(spec, device, text, options, _data: dict[str, bytes] | None = None) -> dict[str, np.ndarray]:
    """Head metrics {name: (L, H)} of a text with other options or on another model. Only the metrics are kept:
    a random re-init of a big model (SmolLM2: 538 MB) is built, run and dropped rather than cached."""
    loaded = _build_model(spec, device, _data) if spec.kind == "reinit" else get_model(spec, device, _data)
    obs = observe(loaded.model, loaded.tokenizer, text, replace(options, kinds=("pattern",)), device)
    return dict(obs.metrics)


@shared("Sorting the heads into kinds…")
def get_kinds(spec, device, text, options, pair, _data: dict[str, bytes] | None = None, _obs=None) -> HeadKinds:
    """Each head's kind on a text (model/analysis/kinds.py): from this page's observation, or for another model
    (a random re-init is built, run and dropped, as for get_metrics)."""
    if _obs is not None:
        return observed_kinds(_obs, pair)
    loaded = _build_model(spec, device, _data) if spec.kind == "reinit" else get_model(spec, device, _data)
    obs = observe(loaded.model, loaded.tokenizer, text, replace(options, kinds=("pattern",)), device)
    return observed_kinds(obs, pair)


@shared("Comparing heads…")
def get_similarity(spec, device, text, options, hide_special, _obs: Observation):
    """(JS distances (K, K), [(layer, head)], clustering order) between the heads' shown patterns."""
    dist, pairs = head_similarity(_obs.shown(_obs.patterns, hide_special))
    return dist, pairs, cluster_order(dist)


@shared("Sorting the heads of the whole text into kinds…")
def get_long_kinds(spec, device, text, options, pair, _long: LongObservation) -> HeadKinds:
    return long_kinds(_long, pair)


@shared("Ranking every head over the whole text…")
def get_long_found(spec, device, text, options, relation, queries, keys, _long: LongObservation) -> Found:
    """Find heads over a text read whole (model/analysis/find_long.py): the view and the page's table share it."""
    return found_whole(_long, relation, queries, keys)


@shared("Comparing heads over the whole text…")
def get_long_similarity(spec, device, text, options, _long: LongObservation):
    """Head similarity of a text read whole: JS distances between its sampled rows, keys pooled into grid cells."""
    dist, pairs = long_similarity(_long)
    return dist, pairs, cluster_order(dist)


@shared("Computing attention flow…")
def get_flow(spec, device, text, options, token: int | None, _patterns: np.ndarray) -> np.ndarray:
    """(N, N) flow of every token after the last layer, or (L, N) one token's flow after every layer."""
    return attention_flow(_patterns) if token is None else flow_from(_patterns, token)


def _mixing_spinner(value_zeroing: bool, **_) -> str:
    return f"Measuring context mixing (norm-based, ALTI{', value zeroing' if value_zeroing else ''})…"


@shared(_mixing_spinner)
def get_mixing(
    spec, device, ids: tuple[int, ...], value_zeroing: bool, causal, scale, positions, ablate, _model
) -> Mixing:
    kept = capture_bytes(_model.cfg, len(ids), MIXING_KINDS)  # ALTI's and value zeroing's work: as much again
    run = {"causal": causal, "scale": scale, "positions": positions, "ablate": ablate}
    with IN_FLIGHT.hold(2 * kept):
        return context_mixing(_model, list(ids), value_zeroing=value_zeroing, **run)


@shared("Reading the corpus profile…")
def get_profile(path: str, written: float) -> Profile | None:
    """A stored corpus profile (keyed by its folder and the time it was written, so a rerun is never stale)."""
    return read_profile(path)


@shared("Taking gradients…")
def get_attribution(spec, device, ids, position: int, target, causal, scale, positions, ablate, _model) -> Attribution:
    run = {"causal": causal, "scale": scale, "positions": positions, "ablate": ablate}
    return attribute(_model, list(ids), position, target, **run)


@shared("Running both orders…")
def get_permutation(spec, device, ids, special, seed, positions, layer, causal, scale, ablate, _model):
    return permutation_check(_model, list(ids), list(special), seed, positions, layer, causal, scale, ablate)


@shared("Running a padded batch…")
def get_padded_batch(spec, device, ids_a, ids_b, layer, pad_id, _model):
    return padded_batch(_model, list(ids_a), list(ids_b), pad_id, layer)


@shared("Predicting…")
def get_predictions(spec, device, ids, positions, ablate, _loaded: LoadedModel):
    return masked_predictions(
        _loaded.model, torch.tensor([list(ids)]), list(positions), _loaded.tokenizer.id_to_token, k=8, ablate=ablate
    )


@shared("Computing Clark et al.'s statistics…")
def get_clark(spec, device, text, options, _obs: Observation) -> dict[str, np.ndarray]:
    """Clark et al.'s head statistics on this text (one document), as their code computes them."""
    from model.analysis.clark import clark_metrics

    return clark_metrics([(list(_obs.tokens), _obs.patterns)])


@shared("Predicting the next token…")
def get_next_tokens(spec, device, text, options, temperature, _obs: Observation, _loaded: LoadedModel):
    """Top-10 (token label, probability) of the next token after every position, from the observation's final
    hidden states (no second forward pass)."""
    top = predictions_from_hidden(_loaded.model, _obs.hidden, temperature=temperature, k=10)
    return [[(_loaded.tokenizer.id_to_token(i), p) for i, p in row] for row in top]


@shared("Generating…")
def get_generation(spec, device, ids, n_new, temperature, seed, _loaded: LoadedModel):
    stop = stop_tokens(_loaded.tokenizer)
    return generate(_loaded.model, list(ids), n_new, temperature=temperature, seed=seed, stop=stop)


@shared("Running a repeated random sequence…")
def get_induction(spec, device, period, seed, _loaded: LoadedModel):
    return induction_run(_loaded.model, _loaded.tokenizer, period, seed)


@shared()
def get_scaling_demo() -> dict[str, np.ndarray]:
    return scaling_demo()


@shared()
def get_steps(spec, device, text, options, layer, head, _obs: Observation, _model):
    weights = head_weights(_model, layer, head)
    return observed_head_steps(_obs, weights, layer, head), weights


@shared("Measuring the residual stream…")
def get_stream(spec, device, text, options, _ids: tuple[int, ...], _model) -> Stream:
    return residual_stream(_model, list(_ids), causal=options.causal, scale=options.scale, positions=options.positions)


@shared()
def _cached_views(spec, device, text, options, hide_special, whole, theme, key, selection, _source) -> list[View]:
    return build(key, _source, theme, **dict(selection))


def views(ctx: PageContext, key: str, /, **selection) -> list[View]:
    """A view of this page's text (viz.views), built once and shared: revisiting a page or switching back to a
    layer costs nothing. ``whole``: drawn from the text read whole (a page marked so), not its first tokens.
    Raises ViewUnavailableError as build does (errors are not cached)."""
    src = ctx.source
    items = tuple(sorted(selection.items()))
    whole = src.long is not None
    return _cached_views(
        src.spec, src.device, src.obs.text, src.options, src.hide_special, whole, ctx.theme, key, items, src
    )


def upload_bytes(spec: ModelSpec) -> dict[str, bytes] | None:
    """This session's uploads behind a spec (or behind the base of a re-initialised one), by sha256 digest: the
    checkpoint's bytes and an uploaded tokenizer.json's."""
    root = spec.root
    wanted = [root.digest if root.kind == "upload" else "", root.tokenizer.removeprefix("upload:")]
    mine = st.session_state["uploads"]
    found = {d: mine[d][1] for d in wanted if d and d in mine}
    return found or None


@shared("Reading the file…")
def get_questions(key: str, name: str, _data: bytes | None, _path: str | None = None) -> Questions | str:
    """What a checkpoint does not say (heads, block order, tokenizer), keyed by an upload's digest or a path with
    its size and time; the loader's message (str) when it cannot be read — loading then shows it."""
    try:
        return upload_questions(_data, name) if _data is not None else questions_at(_path)
    except (CheckpointError, OSError) as exc:
        return str(exc)
