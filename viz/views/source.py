"""A :class:`viz.views.base.Source` that runs everything directly (memoised per instance): for the CLI,
the benchmark and tests. The app uses the same interface backed by its shared caches (viz/shell/services)."""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np
import torch

from model.analysis.attribution import attribution_patching
from model.analysis.circuits import circuit
from model.analysis.composition import composition_with
from model.analysis.find_long import found_whole
from model.analysis.flow import attention_flow, flow_from
from model.analysis.gradients import attribute
from model.analysis.kinds import long_kinds, observed_kinds
from model.analysis.lens import direct_logit_attribution, logit_lens
from model.analysis.long_heads import long_metrics, long_similarity
from model.analysis.mixing import context_mixing
from model.analysis.needle import filler_text, needle_grid
from model.analysis.patching import activation_patching
from model.analysis.paths import path_patching
from model.analysis.scaling import scaling_demo
from model.analysis.similarity import cluster_order, head_similarity
from model.analysis.steps import observed_head_steps
from model.analysis.stream import residual_stream
from model.experiments import Prediction, induction_run, masked_predictions, padded_batch, permutation_check
from model.generate import generate, predictions_from_hidden, stop_tokens
from model.io.catalog import ModelSpec, load
from model.io.state import LoadedModel
from model.long import LONG_FROM, LongObservation
from model.observe import ATTENTION_KINDS, Observation, Options, head_weights, observe
from model.profile.store import read_profile
from model.whole import observe_long


@dataclass
class DirectSource:
    spec: ModelSpec
    loaded: LoadedModel
    obs: Observation
    options: Options = field(default_factory=Options)
    hide_special: bool = False
    long: LongObservation | None = None
    _memo: dict = field(default_factory=dict, repr=False)

    @classmethod
    def for_text(cls, spec: ModelSpec, text: str, options: Options | None = None, **kwargs) -> DirectSource:
        """``whole=True``: a text longer than LONG_FROM tokens is also read whole (model/long.py), as the app's
        pages marked "whole text" read it; obs then holds its first LONG_FROM tokens."""
        options, whole = options or Options(), kwargs.pop("whole", False)
        loaded = load(spec)
        obs = observe(loaded.model, loaded.tokenizer, text, options)
        long = None
        if whole and obs.truncated and loaded.model.cfg.max_seq_len > LONG_FROM:
            long = observe_long(loaded.model, loaded.tokenizer, text, options)
        return cls(spec, loaded, obs, options, long=long, **kwargs)

    def _once(self, key, make):
        if key not in self._memo:
            self._memo[key] = make()
        return self._memo[key]

    def other(self, *, text=None, options=None, spec=None) -> tuple[Observation, LoadedModel]:
        spec, options = spec or self.spec, options or self.options
        text = self.obs.text if text is None else text
        loaded = self.loaded if spec == self.spec else self._once(("model", spec), lambda: load(spec))
        obs = self._once(("obs", spec, text, options), lambda: observe(loaded.model, loaded.tokenizer, text, options))
        return obs, loaded

    def metrics(self, *, spec=None, options=None) -> dict[str, np.ndarray]:
        if self.long is not None and spec in (None, self.spec) and options in (None, self.options):
            return long_metrics(self.long)
        return self.other(spec=spec, options=options)[0].metrics

    def full(self) -> Observation:
        if self.obs.q is not None and self.obs.attn_in is not None:
            return self.obs
        return self.other(options=replace(self.options, kinds=ATTENTION_KINDS))[0]

    def similarity(self):
        if self.long is not None:
            return self._once(("long similarity",), lambda: _ordered(*long_similarity(self.long)))

        def make():
            dist, pairs = head_similarity(self.obs.shown(self.obs.patterns, self.hide_special))
            return dist, pairs, cluster_order(dist)

        return self._once(("similarity",), make)

    def flow(self) -> np.ndarray:
        return self._once(("flow",), lambda: attention_flow(self.obs.patterns))

    def flow_token(self, token: int) -> np.ndarray:
        return self._once(("flow_token", token), lambda: flow_from(self.obs.patterns, token))

    def mixing(self, value_zeroing: bool):
        return self._once(
            ("mixing", value_zeroing),
            lambda: context_mixing(self.loaded.model, self.obs.ids, value_zeroing=value_zeroing, **self._run()),
        )

    def attribution(self, position: int, target: str):
        return self._once(
            ("attribution", position, target),
            lambda: attribute(self.loaded.model, self.obs.ids, position, target, **self._run()),
        )

    def _run(self) -> dict:
        """The mask, scaling, positions and heads off the attention pages draw with (a measure's run)."""
        o = self.options
        return {"causal": self.obs.causal, "scale": o.scale, "positions": o.positions, "ablate": o.ablate}

    def profile(self, path: str):
        return read_profile(path)

    def permutation(self, seed: int, positions: bool, layer: int) -> dict[str, np.ndarray]:
        special = [bool(s) for s in self.obs.special]
        causal = self.obs.causal  # the mask the pages draw with (the model's own, or the sidebar's choice)
        scale, ablate = self.options.scale, self.options.ablate
        return self._once(
            ("perm", seed, positions, layer, causal, scale, ablate),
            lambda: permutation_check(
                self.loaded.model, list(self.obs.ids), special, seed, positions, layer, causal, scale, ablate
            ),
        )

    def padded(self, text_b: str, layer: int) -> dict[str, np.ndarray]:
        tok = self.loaded.tokenizer
        ids_b = tok.encode(text_b, max_len=self.loaded.model.cfg.max_seq_len).ids
        return self._once(
            ("padded", text_b, layer),
            lambda: padded_batch(self.loaded.model, list(self.obs.ids), list(ids_b), tok.pad_id, layer),
        )

    def predictions(self, ids, positions, ablate) -> list[Prediction]:
        def make():
            tok = self.loaded.tokenizer
            return masked_predictions(
                self.loaded.model, torch.tensor([list(ids)]), list(positions), tok.id_to_token, k=8, ablate=ablate
            )

        return self._once(("pred", tuple(ids), tuple(positions), tuple(ablate)), make)

    def scaling(self) -> dict[str, np.ndarray]:
        return self._once(("scaling",), scaling_demo)

    def steps(self, layer: int, head: int):
        def make():
            weights = head_weights(self.loaded.model, layer, head)
            return observed_head_steps(self.full(), weights, layer, head), weights

        return self._once(("steps", layer, head), make)

    def next_tokens(self, temperature: float):
        def make():
            top = predictions_from_hidden(self.loaded.model, self.obs.hidden, temperature, k=10)
            return [[(self.loaded.tokenizer.id_to_token(i), p) for i, p in row] for row in top]

        return self._once(("next", temperature), make)

    def generation(self, n_new: int, temperature: float, seed: int):
        def make():
            stop = stop_tokens(self.loaded.tokenizer)
            ids = list((self.long or self.obs).ids)  # a text read whole is continued whole
            return generate(self.loaded.model, ids, n_new, temperature=temperature, seed=seed, stop=stop)

        return self._once(("gen", n_new, temperature, seed), make)

    def induction(self, period: int, seed: int):
        return self._once(
            ("induction", period, seed), lambda: induction_run(self.loaded.model, self.loaded.tokenizer, period, seed)
        )

    def stream(self, spec=None):
        obs, loaded = self.other(spec=spec)
        o = self.options
        make = lambda: residual_stream(  # noqa: E731
            loaded.model, obs.ids, causal=o.causal, scale=o.scale, positions=o.positions
        )
        return self._once(("stream", spec or self.spec), make), obs

    def kinds(self, spec=None, pair=None):
        key = ("kinds", spec or self.spec, pair)
        if self.long is not None and spec in (None, self.spec):
            return self._once(key, lambda: long_kinds(self.long, pair))
        return self._once(key, lambda: observed_kinds(self.other(spec=spec)[0], pair))

    def long_found(self, relation, queries, keys):
        make = lambda: found_whole(self.long, relation, queries, keys)  # noqa: E731
        return self._once(("found", relation, tuple(queries), tuple(keys)), make)

    def lens(self, positions, target):
        make = lambda: logit_lens(self.loaded.model, list(self.obs.ids), list(positions), target)  # noqa: E731
        return self._once(("lens", tuple(positions), target), make)

    def logit_attribution(self, target, foil, position):
        make = lambda: direct_logit_attribution(self.loaded.model, list(self.obs.ids), target, foil, position)  # noqa: E731
        return self._once(("dla", target, foil, position), make)

    def patching(self, corrupted, metric, kinds, progress=None):
        ids = list(self.obs.ids)
        make = lambda: activation_patching(self.loaded.model, ids, list(corrupted), metric, kinds, progress)  # noqa: E731
        return self._once(("patching", tuple(corrupted), metric, tuple(kinds)), make)

    def patching_kept(self, corrupted, metric, kinds):
        """Activation patching's result on these prompts if it has been run (it is not run for this)."""
        return self._memo.get(("patching", tuple(corrupted), metric, tuple(kinds)))

    def attribution_patching(self, corrupted, metric, kinds):
        ids = list(self.obs.ids)
        make = lambda: attribution_patching(self.loaded.model, ids, list(corrupted), metric, kinds)  # noqa: E731
        return self._once(("attribution_patching", tuple(corrupted), metric, tuple(kinds)), make)

    def path_patching(self, corrupted, metric, receivers, progress=None):
        ids = list(self.obs.ids)
        make = lambda: path_patching(self.loaded.model, ids, list(corrupted), metric, receivers, progress)  # noqa: E731
        return self._once(("path_patching", tuple(corrupted), metric, receivers), make)

    def needle(self, lengths, depths):
        """Needle runs on every length × depth (percent), run here (the app runs them as a background job)."""

        def make():
            tok = self.loaded.tokenizer
            return needle_grid(self.loaded.model, tok, filler_text(), list(lengths), [d / 100 for d in depths])

        return self._once(("needle", tuple(lengths), tuple(depths)), make)

    def composition(self, layer, head, mode):
        make = lambda: composition_with(self.loaded.model, layer, head, mode)  # noqa: E731
        return self._once(("composition", layer, head, mode), make)

    def circuit(self, layer, head, embedding=None):
        make = lambda: circuit(self.loaded.model, layer, head, list(self.obs.ids), embedding=embedding)  # noqa: E731
        return self._once(("circuit", layer, head, embedding), make)


def _ordered(dist: np.ndarray, pairs: list) -> tuple[np.ndarray, list, np.ndarray]:
    return dist, pairs, cluster_order(dist)
